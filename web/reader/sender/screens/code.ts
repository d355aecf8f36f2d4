import { alertBox, type Screen } from '../../app.ts';
import { h, uid } from '../../dom.ts';
import { errorText, isCode } from '../../errors.ts';
import { formatDuration } from '../../format.ts';
import { busy, clearInvalid, countdown, flagInvalid } from '../../screens/parts.ts';
import type { SenderCodeSent } from '../api.ts';
import type { SenderPage } from '../page.ts';

/**
 * Second screen: the code from the email, under the recipients' code rules: the tries left after a wrong
 * code, a new code once the old one is void or expired, and the rate limit's wait counted down on the button.
 */
export function codeScreen(page: SenderPage, email: string, sent: SenderCodeSent): Screen {
  const { t } = page;
  return {
    name: 'sender-code',
    title: t.code.title,
    render() {
      const alert = alertBox();
      const id = uid('code');
      const input = h('input', {
        id,
        name: 'code',
        class: 'code-input',
        type: 'text',
        inputmode: 'numeric',
        autocomplete: 'one-time-code',
        pattern: '[0-9]*',
        maxlength: sent.codeLength + 4,
        required: true,
        spellcheck: 'false',
      });
      const submit = h('button', { type: 'submit', class: 'primary' }, t.code.submit);
      const form = h(
        'form',
        { novalidate: true },
        h('div', { class: 'field' }, h('label', { for: id }, t.code.label), input),
        alert.element,
        submit,
      );
      const resend = h('button', { type: 'button', class: 'secondary' }, t.code.resend);
      const wait = h('p', { class: 'hint wait', hidden: true });
      const resent = h('p', { class: 'notice', role: 'status', hidden: true });

      let stop: (() => void) | undefined;
      const cooldown = (seconds: number) => {
        stop?.();
        resend.disabled = true;
        wait.hidden = false;
        stop = countdown(
          seconds,
          resend,
          (left) => (wait.textContent = t.code.resendIn(formatDuration(t, left))),
          () => {
            resend.disabled = false;
            wait.hidden = true;
          },
        );
      };
      const usable = (yes: boolean) => {
        input.disabled = !yes;
        submit.disabled = !yes;
      };

      const requestNew = (button: HTMLButtonElement) => {
        alert.clear();
        resent.hidden = true;
        void (async () => {
          const error = await busy(button, t.signIn.sending, () =>
            page.api.requestCode(email).then(
              () => undefined,
              (failure: unknown) => failure ?? new Error('failed'),
            ),
          );
          if (error === undefined) {
            usable(true);
            resent.textContent = t.code.resent;
            resent.hidden = false;
            input.value = '';
            input.removeAttribute('aria-invalid');
            input.focus();
            return;
          }
          alert.show(t, error);
          if (isCode(error, 'sms_rate_limit') && error.retryAfter) cooldown(error.retryAfter);
        })();
      };
      resend.addEventListener('click', () => requestNew(resend));

      form.addEventListener('submit', (event) => {
        event.preventDefault();
        alert.clear();
        clearInvalid(input);
        const value = input.value.replace(/\s+/g, '');
        if (!/^\d+$/.test(value)) {
          alert.say(t.errors.invalid_code_or_email);
          return flagInvalid(input);
        }
        void (async () => {
          const outcome = await busy(submit, t.code.checking, () =>
            page.api.verify(value).then(
              (signedIn) => ({ sender: signedIn.sender, error: undefined }),
              (error: unknown) => ({ sender: undefined, error }),
            ),
          );
          if (outcome.sender !== undefined) {
            page.sender = outcome.sender;
            return page.go.list();
          }
          const { error } = outcome;
          if (isCode(error, 'expired_code', 'code_attempts_exceeded')) {
            // A new code is the only way on: the button that gets one is put right under the sentence.
            usable(false);
            input.value = '';
            input.setAttribute('aria-invalid', 'true');
            const again = h('button', { type: 'button', class: 'primary new-code' }, t.code.newCode);
            again.addEventListener('click', () => requestNew(again));
            alert.say(errorText(t, error));
            alert.element.append(again);
            again.focus();
            return;
          }
          alert.show(t, error);
          const left = isCode(error, 'incorrect_code', 'invalid_code_or_email')
            ? error.details.attemptsLeft
            : undefined;
          if (left !== undefined) alert.say(`${errorText(t, error)} ${t.code.attemptsLeft(left)}`);
          if (isCode(error, 'sms_rate_limit') && error.retryAfter) cooldown(error.retryAfter);
          flagInvalid(input);
        })();
      });

      const other = h('button', { type: 'button', class: 'link' }, t.code.otherAddress);
      other.addEventListener('click', () => page.go.signIn(email));

      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.code.title),
        h('p', {}, t.code.sent(sent.codeLength, email), ' ', t.code.validFor(formatDuration(t, sent.expiresIn))),
        form,
        h('div', { class: 'resend' }, resend, wait, resent),
        other,
      );
    },
  };
}
