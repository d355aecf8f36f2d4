import '../app.css';
import './sender.css';
import { isSessionGone, type Screen } from '../app.ts';
import { applyLanguage, initialTexts, languageSwitcher, redrawKeeping } from '../language.ts';
import { PAGE_SIZE, SenderApi } from './api.ts';
import { createSenderPage, type SenderPage } from './page.ts';
import { codeScreen } from './screens/code.ts';
import { detailScreen } from './screens/detail.ts';
import { listScreen } from './screens/list.ts';
import { signedOutScreen } from './screens/signed-out.ts';
import { signInScreen } from './screens/sign-in.ts';
import { fatalScreen, loadingScreen } from './screens/status.ts';
import { pickSenderTexts, SENDER_TEXTS, type SenderTexts } from './texts/index.ts';

/** The sender's page, served at {AUTH_PUBLIC_URL}/sent (docs/sender.md). */
async function start(): Promise<void> {
  let t = initialTexts(pickSenderTexts);
  applyLanguage(t);
  const main = document.getElementById('main')!;
  let page: SenderPage | undefined;
  /** How the screen shown now was reached: a language change draws it again that way, from what was loaded. */
  let redraw: () => unknown = () => undefined;
  const drawn =
    <A extends unknown[], R>(route: (...args: A) => R) =>
    (...args: A): R => {
      redraw = () => route(...args);
      return route(...args);
    };

  let switching = Promise.resolve();
  const switcher = languageSwitcher(
    t,
    (next) => {
      t = next;
      if (page) page.t = next;
      applyLanguage(next, true);
      switcher.update(next);
      switching = switching.then(() => redrawKeeping(main, undefined, redraw)).catch(() => undefined);
    },
    SENDER_TEXTS,
  );
  document.querySelector('.site-header')?.append(switcher.element);

  const showAlone = drawn((screen: (t: SenderTexts) => Screen) => {
    const shown = screen(t);
    main.replaceChildren(shown.render());
    main.dataset.screen = shown.name;
    document.title = `${shown.title} – ${t.appName}`;
  });

  const api = new SenderApi();
  showAlone(loadingScreen);
  try {
    const config = await api.config();
    page = createSenderPage(api, t, main, (p) => {
      /** Loads, then shows; the session gone (401) leads to the sign-in with a note, other failures say why. */
      const load = async <T>(work: () => Promise<T>, show: (value: T) => void) => {
        p.show(loadingScreen(p.t));
        try {
          show(await work());
        } catch (error) {
          if (isSessionGone(error)) {
            p.sender = undefined;
            p.notice = p.t.sessionEnded;
            return p.go.signIn();
          }
          p.show(fatalScreen(p.t, error));
        }
      };
      return {
        signIn: (prefill) => {
          // The note it shows once ("your session has ended") is shown again when drawn in another language.
          const notice = p.notice;
          drawn(() => {
            p.notice = notice;
            p.show(signInScreen(p, prefill));
          })();
        },
        code: drawn((email, sent) => p.show(codeScreen(p, email, sent))),
        list: (query = '') =>
          load(
            () => p.api.sealed({ q: query || undefined }),
            (messages) => {
              const state = { query, messages, more: messages.length >= PAGE_SIZE };
              drawn(() => p.show(listScreen(p, state)))();
            },
          ),
        detail: (id, notice) =>
          load(
            () => p.api.message(id),
            (message) => drawn(() => p.show(detailScreen(p, message, notice)))(),
          ),
        signedOut: drawn(() => p.show(signedOutScreen(p))),
      };
    });
    page.sender = config.sender;
    if (config.signedIn && config.sender) await page.go.list();
    else page.go.signIn();
  } catch (error) {
    showAlone((t) => fatalScreen(t, error));
  }
}

void start();
