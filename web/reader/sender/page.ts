import type { Screen } from '../app.ts';
import type { SenderApi, SenderCodeSent, SentMessage } from './api.ts';
import type { SenderTexts } from './texts/index.ts';

/**
 * What every screen of the sender's page gets, as the reader's screens get their Reader: the API, the texts
 * (changed by the language switcher, so screens read them when they are made) and the way to the others.
 */
export interface SenderPage {
  api: SenderApi;
  t: SenderTexts;
  /** The proven address, once signed in. */
  sender: string | undefined;
  /** A note shown once at the top of the next sign-in screen ("your session has ended"). */
  notice: string | undefined;
  /** Replaces the page's content with a screen and moves the focus to its heading. */
  show(screen: Screen): void;
  go: SenderRoutes;
}

/** The screens a screen can lead to: the one router (main.ts fills it), so that no screen imports another. */
export interface SenderRoutes {
  signIn(prefill?: string): void;
  code(email: string, sent: SenderCodeSent): void;
  /** Loads the first page of the list (with `query`, the search) and shows it; sign-in when the session is gone. */
  list(query?: string): Promise<void>;
  /** Loads one message and shows it; `notice` says what was just done to it. */
  detail(id: string, notice?: (t: SenderTexts) => string): Promise<void>;
  signedOut(): void;
}

/** The list as loaded so far: drawn again as it is when the language changes. */
export interface ListState {
  query: string;
  messages: SentMessage[];
  /** The last page was full: there may be older messages. */
  more: boolean;
}

export function createSenderPage(
  api: SenderApi,
  t: SenderTexts,
  main: HTMLElement,
  routes: (page: SenderPage) => SenderRoutes,
): SenderPage {
  const page: SenderPage = {
    api,
    t,
    sender: undefined,
    notice: undefined,
    show(screen) {
      main.replaceChildren(screen.render());
      main.dataset.screen = screen.name;
      document.title = `${screen.title} – ${page.t.appName}`;
      // Screen readers and keyboards start at the new screen's heading, not at the top of an old page.
      const heading = main.querySelector('h1');
      if (heading) {
        heading.setAttribute('tabindex', '-1');
        heading.focus({ preventScroll: true });
      }
      window.scrollTo(0, 0);
    },
    go: undefined as unknown as SenderRoutes, // set below: the routes need the page they lead
  };
  page.go = routes(page);
  return page;
}
