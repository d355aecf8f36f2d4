import type { Api, CodeGone, CodePending, CodeRequest, CodeSent, MessageEnd, ReaderConfig } from './api.ts';
import { ApiError } from './api-error.ts';
import { append, h } from './dom.ts';
import { errorReference, errorText, type ErrorTexts } from './errors.ts';
import { clearKept, type Kept, loadKept, saveKept } from './kept.ts';
import type { Texts } from './texts/index.ts';

/**
 * What every screen gets: the API, the texts (changed by the language switcher, so screens read them when
 * they are made), the message of this page and the way to the next screen.
 */
export interface Reader {
  api: Api;
  t: Texts;
  messageId: string;
  config: ReaderConfig;
  /** Replaces the page's content with a screen and moves the focus to its heading. */
  show(screen: Screen): void;
  /** A note shown at the top of the next screen (e.g. "your session has ended"). */
  notice: string | undefined;
  /**
   * What the screen shown must finish before it is drawn again in another language (the reply's pending
   * save); show() clears it, the screen sets it.
   */
  settle: (() => Promise<unknown>) | undefined;
  /** The screens' state that survives a language switch and a reload (kept.ts); `save()` writes it for a reload. */
  kept: Kept;
  save(): void;
  /**
   * Drops the kept state. At sign-out all of it; at sign-in all but the reply's (`keepReply`): the screens of
   * before belong to the sign-in, the words typed in a reply whose session ended belong to the recipient.
   */
  forget(keepReply?: boolean): void;
  /** The address the reader signed in with, once known (for "send me a copy"). */
  email: string | undefined;
  /**
   * The way to every other screen: the one router (main.ts fills it), so that no screen imports one it
   * leads to. What screens share they import: controls from screens/parts.ts, and the loading and failure
   * screens of screens/status.ts, which lead nowhere.
   */
  go: Routes;
}

/** The screens a screen can lead to, by name. */
export interface Routes {
  signIn(prefill?: Partial<CodeRequest>): void;
  code(request: CodeRequest | undefined, sent: CodeSent, earlier?: CodePending | CodeGone): void;
  /** Loads the message (and the draft) and shows it, or the sign-in form when the session is gone. */
  message(): Promise<void>;
  sent(to: string): void;
  /** `everywhere`: every session of the reader ended (sign out everywhere), not only this one. */
  signedOut(everywhere?: boolean): void;
  /** The message ended (expired or withdrawn): its final state; `signedIn` offers the sign-out. */
  ended(end: MessageEnd, signedIn: boolean): void;
}

export interface Screen {
  /** For the document title: "<title> – Sealpost". */
  title: string;
  /** Used by the tests and the CSS: <main data-screen="…">. */
  name: string;
  render(): HTMLElement;
}

export function createReader(
  api: Api,
  t: Texts,
  messageId: string,
  config: ReaderConfig,
  main: HTMLElement,
  routes: (reader: Reader) => Routes,
): Reader {
  const reader: Reader = {
    api,
    t,
    messageId,
    config,
    notice: undefined,
    settle: undefined,
    kept: loadKept(messageId),
    save: () => saveKept(messageId, reader.kept),
    forget(keepReply = false) {
      const reply = keepReply ? reader.kept.reply : undefined;
      reader.kept = reply ? { reply } : {};
      if (reply) saveKept(messageId, reader.kept);
      else clearKept(messageId);
    },
    email: config.email,
    show(screen) {
      reader.settle = undefined;
      const content = screen.render();
      main.replaceChildren(content);
      main.dataset.screen = screen.name;
      document.title = `${screen.title} – ${reader.t.appName}`;
      // Screen readers and keyboards start at the new screen's heading, not at the top of an old page.
      const heading = main.querySelector('h1');
      if (heading) {
        heading.setAttribute('tabindex', '-1');
        heading.focus({ preventScroll: true });
      }
      window.scrollTo(0, 0);
    },
    go: undefined as unknown as Routes, // set below: the routes need the reader they lead
  };
  reader.go = routes(reader);
  return reader;
}

/**
 * The alert box of a form: empty until an error, then the sentence (role=alert reads it out at once).
 */
export function alertBox(): {
  element: HTMLElement;
  show(t: ErrorTexts, error: unknown, lead?: string): void;
  say(text: string): void;
  clear(): void;
} {
  const element = h('div', { class: 'alert', role: 'alert', hidden: true });
  return {
    element,
    /** The error's sentence; `lead` first when the error alone would not say what failed. */
    show(t, error, lead) {
      const reference = errorReference(t, error);
      element.replaceChildren(h('p', {}, lead ? `${lead} ${errorText(t, error)}` : errorText(t, error)));
      if (reference) append(element, h('p', { class: 'reference' }, reference));
      element.hidden = false;
    },
    say(text) {
      element.replaceChildren(h('p', {}, text));
      element.hidden = false;
    },
    clear() {
      element.replaceChildren();
      element.hidden = true;
    },
  };
}

/** The session ended under us (401): back to sign-in with a note. */
export function isSessionGone(error: unknown): boolean {
  return (
    error instanceof ApiError &&
    error.status === 401 &&
    (error.errorCode === 'unauthenticated' || error.errorCode === undefined)
  );
}
