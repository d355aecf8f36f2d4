import { alertBox, type Reader } from '../app.ts';
import { h, uid } from '../dom.ts';
import { errorText, isCode } from '../errors.ts';
import { formatDuration } from '../format.ts';
import type { Texts } from '../texts/index.ts';

/** A labelled input with an optional hint, wired with for/id and aria-describedby. */
export function field(options: {
  label: string;
  hint?: string;
  input: Record<string, string | number | boolean | undefined>;
}): { wrapper: HTMLElement; input: HTMLInputElement } {
  const id = uid('field');
  const hintId = options.hint ? `${id}-hint` : undefined;
  const input = h('input', { id, ...options.input, 'aria-describedby': hintId });
  const wrapper = h(
    'div',
    { class: 'field' },
    h('label', { for: id }, options.label),
    options.hint ? h('p', { class: 'hint', id: hintId }, options.hint) : null,
    input,
  );
  return { wrapper, input };
}

/** Marks the field wrong (for screen readers too) and puts the cursor there. */
export function flagInvalid(input: HTMLInputElement | HTMLTextAreaElement): void {
  input.setAttribute('aria-invalid', 'true');
  input.focus();
  if (input instanceof HTMLInputElement) input.select();
}

export function clearInvalid(...inputs: Array<HTMLInputElement | HTMLTextAreaElement>): void {
  for (const input of inputs) input.removeAttribute('aria-invalid');
}

/** A button that shows `busyLabel` and cannot be pressed while `work` runs. */
export async function busy<T>(button: HTMLButtonElement, busyLabel: string, work: () => Promise<T>): Promise<T> {
  const label = button.textContent;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.textContent = busyLabel;
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.textContent = label;
  }
}

/**
 * Who sent the sealed message, as the sign-in screens show it (and the subject only when the operator lets the
 * page show it before sign-in). Each value isolated (<bdi>): a right-to-left name cannot reorder what follows.
 */
export function messageCard(
  from: string,
  fromLabel: string,
  subject: string | undefined,
  subjectLabel: string,
): HTMLElement {
  return h(
    'dl',
    { class: 'message-card' },
    h('div', {}, h('dt', {}, fromLabel), h('dd', {}, h('bdi', {}, from))),
    subject === undefined
      ? null
      : h('div', {}, h('dt', {}, subjectLabel), h('dd', { class: 'subject' }, h('bdi', {}, subject))),
  );
}

/**
 * A countdown to when something may be done again (Retry-After, the per-number interval): calls
 * `onTick` with the seconds left every second and `onDone` at zero, while `owner` is on the page.
 * Returns a stop function.
 */
export function countdown(
  seconds: number,
  owner: Element,
  onTick: (left: number) => void,
  onDone: () => void,
): () => void {
  const end = Date.now() + seconds * 1000;
  let timer = 0;
  const tick = () => {
    // The screen was left: nothing to update any more.
    if (!owner.isConnected) return window.clearInterval(timer);
    const left = Math.ceil((end - Date.now()) / 1000);
    if (left <= 0) {
      window.clearInterval(timer);
      onDone();
      return;
    }
    onTick(left);
  };
  timer = window.setInterval(tick, 1000);
  if (seconds > 0) onTick(Math.ceil(seconds));
  else onDone();
  return () => window.clearInterval(timer);
}

/**
 * The sign-out button and its alert. "You are signed out" only once the server has ended the session:
 * when GET /logout fails the session is still alive (on a shared computer the next person could read
 * on), so the reader must learn that and can try again.
 */
export function signOutControl(reader: Reader, buttonClass: string): { button: HTMLButtonElement; alert: HTMLElement } {
  const { t } = reader;
  return signOutButton(reader, buttonClass, {
    label: t.message.signOut,
    busy: t.message.signingOut,
    failed: t.message.signOutFailed,
    end: () => reader.api.logout(),
    everywhere: false,
  });
}

/**
 * "Sign out everywhere" (POST /v1/auth/sign-out-everywhere): a session on a lost phone ends with the others. Said
 * done only once the server ended them, as for the sign-out above.
 */
export function signOutEverywhereControl(
  reader: Reader,
  buttonClass: string,
): { button: HTMLButtonElement; alert: HTMLElement } {
  const { t } = reader;
  return signOutButton(reader, buttonClass, {
    label: t.sessions.signOutEverywhere,
    busy: t.sessions.signingOutEverywhere,
    failed: t.sessions.signOutEverywhereFailed,
    end: () => reader.api.signOutEverywhere(),
    everywhere: true,
  });
}

function signOutButton(
  reader: Reader,
  buttonClass: string,
  how: { label: string; busy: string; failed: string; end: () => Promise<unknown>; everywhere: boolean },
): { button: HTMLButtonElement; alert: HTMLElement } {
  const alert = alertBox();
  const button = h('button', { type: 'button', class: buttonClass }, how.label);
  button.addEventListener('click', () => {
    alert.clear();
    void busy(button, how.busy, async () => {
      try {
        await how.end();
      } catch (error) {
        alert.show(reader.t, error, how.failed);
        return;
      }
      reader.forget();
      reader.go.signedOut(how.everywhere);
    });
  });
  return { button, alert: alert.element };
}

/**
 * The place under a form's last button where its sentences appear: the wait, a success (role=status, in a box) and
 * the alert. Below every control of its form, so that a sentence appearing, changing or going moves nothing that
 * can be clicked (a press that clears an error must not bring another button under the pointer).
 */
export function messages(): {
  element: HTMLElement;
  alert: ReturnType<typeof alertBox>;
  wait: HTMLElement;
  status: HTMLElement;
  /** Says `text` as done, in a status box; `undefined` takes it away. */
  done(text: string | undefined): void;
} {
  const alert = alertBox();
  // The countdown is not a live region: read out every second it would drown everything else.
  const wait = h('p', { class: 'hint wait', hidden: true });
  const status = h('div', { class: 'notice', role: 'status', hidden: true });
  return {
    element: h('div', { class: 'messages' }, wait, status, alert.element),
    alert,
    wait,
    status,
    done(text) {
      status.replaceChildren(...(text ? [h('p', {}, text)] : []));
      status.hidden = !text;
    },
  };
}

/**
 * Holds `button` back for `seconds`, the wait counted down in `line` with `sentence`; `onDone` when it is over. Of
 * two holds on one button (the wait between two codes, then the limit per hour), the one that ends last speaks and
 * lets the button go.
 */
export function holdBack(
  t: Texts,
  button: HTMLButtonElement,
  line: HTMLElement,
  seconds: number,
  sentence: (duration: string) => string,
  onDone: () => void = () => undefined,
): void {
  if (seconds <= 0) return;
  const end = Date.now() + seconds * 1000;
  if (end <= Number(button.dataset.heldUntil ?? 0)) return;
  button.dataset.heldUntil = String(end);
  const last = () => button.dataset.heldUntil === String(end);
  button.disabled = true;
  line.hidden = false;
  countdown(
    seconds,
    button,
    (left) => {
      if (last()) line.textContent = sentence(formatDuration(t, left));
    },
    () => {
      if (!last()) return;
      delete button.dataset.heldUntil;
      button.disabled = false;
      line.hidden = true;
      onDone();
    },
  );
}

/**
 * Says a refused code request or code in the alert: a wait between two codes as a wait (no alert, the countdown
 * says it), the limit per hour as "too many codes" with its countdown, a wrong or replaced code with the tries left,
 * anything else by its sentence. `button` is the one that asks for a code, held back during a wait.
 */
export function sayRefusal(
  t: Texts,
  box: ReturnType<typeof messages>,
  error: unknown,
  button?: HTMLButtonElement,
  lead?: string,
): void {
  if (isCode(error, 'sms_rate_limit')) {
    const interval = error.details.limit === 'interval';
    if (interval) box.alert.clear();
    else box.alert.say(t.errors.sms_rate_limit);
    if (button && error.retryAfter)
      holdBack(t, button, box.wait, error.retryAfter, interval ? t.codeState.waitForNew : t.code.resendIn, () =>
        box.alert.clear(),
      );
    return;
  }
  box.alert.show(t, error, lead);
  const left = isCode(error, 'incorrect_code', 'invalid_code_or_email', 'code_replaced')
    ? error.details.attemptsLeft
    : undefined;
  if (left !== undefined) box.alert.say(`${errorText(t, error)} ${t.code.attemptsLeft(left)}`);
}
