import type { Reader } from '../app.ts';
import { announce, h } from '../dom.ts';
import { isCode, isEnded } from '../errors.ts';
import { keepError, keptError, type Kept } from '../kept.ts';
import { busy, clearInvalid, field, flagInvalid, messages, sayRefusal } from './parts.ts';
import { messageEnd } from './status.ts';

type MobileKept = NonNullable<Kept['mobile']>;
type CodeStep = NonNullable<MobileKept['step']>;

/** What differs between the two mobile forms: their texts and the two calls each makes. */
interface MobileFlow {
  texts: {
    title: string;
    explain: string;
    number: string;
    numberHint: string;
    start: string;
    starting: string;
    codeTo(to: string): string;
    code: string;
    confirm: string;
    confirming: string;
    done(to: string): string;
  };
  start(number: string): Promise<CodeStep>;
  /** The next code step, or the number the flow ended with. */
  confirm(code: string): Promise<CodeStep | { mobile: string }>;
  /** After success: the number form again (another change may follow), or nothing more to do. */
  again: boolean;
}

/**
 * The mobile number change, for a recipient who signs in by SMS: the new number, then a code sent to the
 * current number, then one sent to the new number (the service refuses any other order, so that a session
 * alone cannot take the number over). Folded away under its heading until opened.
 */
export function mobileSection(reader: Reader): HTMLElement | null {
  if (reader.config.method !== 'sms') return null;
  const texts = reader.t.mobile;
  return mobileForm(reader, {
    texts: { ...texts, number: texts.newNumber, numberHint: texts.newNumberHint, done: texts.changed },
    start: (number) => reader.api.changeMobile(number),
    confirm: (code) => reader.api.confirmMobile(code),
    again: true,
  });
}

/**
 * For a recipient who signed in by email: a number for their later messages, proven by a code sent to it
 * (docs/design.md#contacts). This message keeps its way of signing in. Folded away under its heading until opened.
 */
export function laterMobileSection(reader: Reader): HTMLElement | null {
  if (reader.config.method !== 'email') return null;
  const texts = reader.t.laterMobile;
  return mobileForm(reader, {
    texts: { ...texts, done: texts.added },
    start: (number) => reader.api.addLaterMobile(number),
    confirm: (code) => reader.api.confirmLaterMobile(code),
    again: false,
  });
}

/**
 * The one form of both mobile flows, built like the sign-in form (screens/parts.ts): a labelled field, a primary
 * button, and under it the sentences (the wait, the tries left, the success in a status box), so that nothing moves
 * under a click. Its state (open, number typed, code step, error, success) is kept in reader.kept.mobile, so that a
 * language switch or a reload shows it again; never the code.
 */
function mobileForm(reader: Reader, flow: MobileFlow): HTMLElement {
  const { t } = reader;
  const { texts } = flow;
  reader.kept.mobile ??= {};
  const kept = reader.kept.mobile;
  const save = () => {
    reader.kept.mobile = kept;
    reader.save();
  };
  const body = h('div', { class: 'mobile-change' });
  const details = h(
    'details',
    { class: 'card mobile', open: kept.open === true },
    h('summary', {}, h('h2', {}, texts.title)),
    body,
  );
  details.addEventListener('toggle', () => {
    kept.open = details.open;
    save();
  });

  /** Says `error` under the form, keeps it, and marks `input`. */
  const refuse = (box: ReturnType<typeof messages>, error: unknown, input: HTMLInputElement, button: HTMLElement) => {
    kept.error = keepError(error);
    save();
    sayRefusal(t, box, error, button as HTMLButtonElement);
    if (!isCode(error, 'sms_rate_limit')) flagInvalid(input);
  };

  const start = () => {
    const box = messages();
    const number = field({
      label: texts.number,
      hint: texts.numberHint,
      input: { type: 'tel', name: 'newMobile', autocomplete: 'tel', required: true, value: kept.number },
    });
    number.input.addEventListener('input', () => {
      kept.number = number.input.value;
      save();
    });
    const button = h('button', { type: 'submit', class: 'primary' }, texts.start);
    const form = h('form', { novalidate: true }, number.wrapper, button, box.element);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      clearInvalid(number.input);
      box.alert.clear();
      box.done(undefined);
      void (async () => {
        // Said once the button is itself again: a wait then holds it back (busy() would enable it at its end).
        const outcome = await busy(button, texts.starting, () =>
          flow.start(number.input.value.trim()).then(
            (step) => ({ step, error: undefined }),
            (error: unknown) => ({ step: undefined, error }),
          ),
        );
        if (outcome.step) {
          kept.step = outcome.step;
          kept.error = undefined;
          kept.done = undefined;
          save();
          askCode(outcome.step);
          (body.querySelector('input') as HTMLInputElement | null)?.focus();
          return;
        }
        if (isEnded(outcome.error)) return reader.go.ended(messageEnd(outcome.error), true);
        refuse(box, outcome.error, number.input, button);
      })();
    });
    body.replaceChildren(h('p', {}, texts.explain), form);
    if (kept.done) box.done(texts.done(kept.done));
    const said = keptError(kept.error);
    if (said) sayRefusal(t, box, said, button);
  };

  const askCode = (step: CodeStep) => {
    const box = messages();
    const code = field({
      label: texts.code,
      hint: texts.codeTo(step.to),
      input: {
        type: 'text',
        name: 'mobileCode',
        inputmode: 'numeric',
        autocomplete: 'one-time-code',
        maxlength: step.codeLength,
        required: true,
        class: 'code-input',
      },
    });
    const button = h('button', { type: 'submit', class: 'primary' }, texts.confirm);
    const form = h('form', { novalidate: true }, code.wrapper, button, box.element);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      clearInvalid(code.input);
      box.alert.clear();
      // Nothing to check is not sent: no try is spent on an empty field (a second press on a form just replaced).
      const value = code.input.value.replace(/[\s-]+/g, '');
      if (!/^\d+$/.test(value)) {
        box.alert.say(t.errors.incorrect_code);
        return flagInvalid(code.input);
      }
      void (async () => {
        const outcome = await busy(button, texts.confirming, () =>
          flow.confirm(value).then(
            (answer) => ({ answer, error: undefined }),
            (error: unknown) => ({ answer: undefined, error }),
          ),
        );
        const { answer, error } = outcome;
        if (answer) {
          kept.error = undefined;
          if ('to' in answer) {
            kept.step = answer;
            save();
            askCode(answer);
            (body.querySelector('input') as HTMLInputElement | null)?.focus();
            return;
          }
          kept.step = undefined;
          kept.number = undefined;
          kept.done = answer.mobile;
          save();
          announce(texts.done(answer.mobile));
          return finish();
        }
        if (isEnded(error)) return reader.go.ended(messageEnd(error), true);
        // A code that is gone cannot be tried again: back to the number, where the one way on starts anew.
        if (isCode(error, 'expired_code', 'code_attempts_exceeded')) {
          kept.step = undefined;
          kept.error = keepError(error);
          save();
          return start();
        }
        refuse(box, error, code.input, button);
      })();
    });
    body.replaceChildren(form);
    const said = keptError(kept.error);
    if (said) sayRefusal(t, box, said);
  };

  /** The flow ended: said in a status box; the number form again where another change may follow. */
  const finish = () => {
    if (flow.again) return start();
    const box = messages();
    box.done(texts.done(kept.done ?? ''));
    body.replaceChildren(box.element);
  };

  if (kept.step) askCode(kept.step);
  else if (kept.done && !flow.again) finish();
  else start();
  return details;
}
