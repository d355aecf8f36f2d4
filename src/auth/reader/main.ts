import './app.css';
import { Api } from './api.ts';
import { createReader } from './app.ts';
import { codeScreen } from './screens/code.ts';
import { messageScreen } from './screens/message.ts';
import { sentScreen } from './screens/sent.ts';
import { signedOutScreen } from './screens/signed-out.ts';
import { signInScreen } from './screens/sign-in.ts';
import { fatalScreen, loadingScreen } from './screens/status.ts';
import { pickTexts } from './texts/index.ts';

/** The page is served at /m/{id} for any id; the id is the sealed message's. */
const MESSAGE_PATH = /^\/m\/([A-Za-z0-9_-]{1,128})\/?$/;

async function start(): Promise<void> {
  const t = pickTexts(navigator.languages ?? [navigator.language]);
  document.documentElement.lang = t.lang;
  const main = document.getElementById('main')!;
  const showAlone = (screen: { title: string; name: string; render(): HTMLElement }) => {
    main.replaceChildren(screen.render());
    main.dataset.screen = screen.name;
    document.title = `${screen.title} – ${t.appName}`;
  };
  const skip = document.querySelector<HTMLAnchorElement>('.skip-link');
  if (skip) skip.textContent = t.skipToContent;

  const match = MESSAGE_PATH.exec(window.location.pathname);
  if (!match) return showAlone(fatalScreen({ t }, undefined, t.fatal.badLink));
  const messageId = match[1]!;
  const api = new Api(messageId);
  showAlone(loadingScreen({ t }));
  try {
    const config = await api.config(messageId);
    // The one router: every screen reaches the others through reader.go, none imports another.
    const reader = createReader(api, t, messageId, config, main, (r) => ({
      signIn: (prefill) => r.show(signInScreen(r, prefill)),
      code: (request, sent, earlier) => r.show(codeScreen(r, request, sent, earlier)),
      message: () => messageScreen(r),
      sent: (to) => r.show(sentScreen(r, to)),
      signedOut: () => r.show(signedOutScreen(r)),
    }));
    if (config.signedIn) await reader.go.message();
    else if (config.codePending) {
      // A reload on the code screen: the code sent before is still good, so no new one goes out.
      const pending = config.codePending;
      reader.go.code(undefined, { method: pending.method, codeLength: config.codeLength, expiresIn: pending.expiresIn }, pending);
    } else reader.go.signIn();
  } catch (error) {
    showAlone(fatalScreen({ t }, error));
  }
}

void start();
