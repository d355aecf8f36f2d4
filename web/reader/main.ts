import './app.css';
import { Api } from './api.ts';
import { createReader, type Reader, type Screen } from './app.ts';
import { applyLanguage, initialTexts, languageSwitcher, redrawKeeping } from './language.ts';
import { codeScreen } from './screens/code.ts';
import { messageScreen } from './screens/message.ts';
import { sentScreen } from './screens/sent.ts';
import { signedOutScreen } from './screens/signed-out.ts';
import { signInScreen } from './screens/sign-in.ts';
import { endedScreen, fatalScreen, loadingScreen } from './screens/status.ts';
import type { Texts } from './texts/index.ts';

/** The page is served at /m/{id} for any id; the id is the sealed message's. */
const MESSAGE_PATH = /^\/m\/([A-Za-z0-9_-]{1,128})\/?$/;

/**
 * The second click of a double-click (a click count, MouseEvent.detail, of 2 or more) never reaches a button: the
 * person meant one press, and the first may already have changed the screen under the pointer. The screens are
 * laid out so that it would land on nothing that sends (screens/parts.ts, messages); this holds besides.
 */
function dropRepeatedClicks(): void {
  document.addEventListener(
    'click',
    (event) => {
      if (event.detail < 2 || !(event.target instanceof Element) || !event.target.closest('button')) return;
      event.preventDefault();
      event.stopImmediatePropagation();
    },
    true,
  );
}

async function start(): Promise<void> {
  dropRepeatedClicks();
  let t = initialTexts();
  applyLanguage(t);
  const main = document.getElementById('main')!;
  let reader: Reader | undefined;
  /** How the screen shown now was reached: a language change draws it again that way. */
  let redraw: () => unknown = () => undefined;
  const drawn =
    <A extends unknown[], R>(route: (...args: A) => R) =>
    (...args: A): R => {
      redraw = () => route(...args);
      return route(...args);
    };

  // One language change after the other: a quick run through the options ends at the last one chosen.
  let switching = Promise.resolve();
  const switcher = languageSwitcher(t, (next) => {
    t = next;
    if (reader) reader.t = next;
    applyLanguage(next, true);
    switcher.update(next);
    switching = switching.then(() => redrawKeeping(main, reader?.settle, redraw)).catch(() => undefined);
  });
  document.querySelector('.site-header')?.append(switcher.element);

  const showAlone = drawn((screen: (t: Texts) => Screen) => {
    const shown = screen(t);
    main.replaceChildren(shown.render());
    main.dataset.screen = shown.name;
    document.title = `${shown.title} – ${t.appName}`;
  });

  const match = MESSAGE_PATH.exec(window.location.pathname);
  if (!match) return showAlone((t) => fatalScreen({ t }, undefined, t.fatal.badLink));
  const messageId = match[1]!;
  const api = new Api(messageId);
  showAlone((t) => loadingScreen({ t }));
  try {
    const config = await api.config(messageId);
    // The one router: every screen reaches the others through reader.go, none imports one it leads to.
    reader = createReader(api, t, messageId, config, main, (r) => ({
      signIn: (prefill) => {
        // The note it shows once ("your session has ended") is shown again when drawn in another language.
        const notice = r.notice;
        // Come back to from the code screen: what was typed there, and no error of before.
        if (prefill) r.kept.signIn = { email: prefill.email, mobile: prefill.mobile };
        r.save();
        drawn(() => {
          r.notice = notice;
          r.show(signInScreen(r));
        })();
      },
      // Drawn again in another language, the screen shows what reader.kept holds: its error, its wait.
      code: drawn((request, sent, earlier) => r.show(codeScreen(r, request, sent, earlier))),
      message: drawn(() => messageScreen(r)),
      sent: drawn((to) => r.show(sentScreen(r, to))),
      signedOut: drawn((everywhere) => r.show(signedOutScreen(r, everywhere))),
      ended: drawn((end, signedIn) => {
        // Nothing of the reply can be saved or sent any more: what was kept of it goes with the message.
        if (r.kept.reply) {
          r.kept.reply = undefined;
          r.save();
        }
        r.show(endedScreen(r, end, signedIn));
      }),
    }));
    // Ended for everyone: said at once, with no sign-in form and no code asked for.
    if (config.ended) reader.go.ended({ ...config.ended, contact: config.sender }, config.signedIn);
    else if (config.signedIn) await reader.go.message();
    else if (config.codePending) {
      // A reload on the code screen: the code sent before is still good, so no new one goes out. What the screen
      // said of it (kept in this tab) is said again; the wait counts from when the server sent it.
      const pending = config.codePending;
      reader.kept.code = { ...reader.kept.code, sentAt: Date.parse(pending.sentAt), gone: undefined };
      reader.go.code(
        undefined,
        { method: pending.method, codeLength: config.codeLength, expiresIn: pending.expiresIn },
        pending,
      );
    } else if (config.codeGone) {
      // A reload after the code expired or was voided: the code screen says so, with its one action.
      const gone = config.codeGone;
      reader.kept.code = { sentAt: Date.parse(gone.sentAt), gone: gone.reason };
      reader.go.code(
        undefined,
        { method: gone.method, codeLength: config.codeLength, expiresIn: config.codeExpiresIn },
        gone,
      );
    } else reader.go.signIn();
  } catch (error) {
    showAlone((t) => fatalScreen({ t }, error));
  }
}

void start();
