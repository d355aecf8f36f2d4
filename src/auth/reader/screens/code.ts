import type { CodeSent, Method } from '../api.ts';
import { alertBox, type Reader, type Screen } from '../app.ts';
import { h, uid } from '../dom.ts';
import { isCode } from '../errors.ts';
import { formatDuration } from '../format.ts';
import { messageScreen } from './message.ts';
import { busy, clearInvalid, countdown, field, flagInvalid } from './parts.ts';
import { signInScreen } from './sign-in.ts';

export interface CodeRequest {
  messageId: string;
  email: string;
  mobile?: string;
  method: Method;
}

/**
 * Second screen: the code field (numeric keyboard, one-time-code autofill), "keep me signed in", and
 * a resend button that waits out the per-number interval (or the server's Retry-After).
 */
export function codeScreen(reader: Reader, request: CodeRequest, sent: CodeSent): Screen {
  const { t, config } = reader;
  return {
    name: 'code',
    title: t.code.title,
    render() {
      const alert = alertBox();
      const destination = sent.method === 'sms' ? (request.mobile ?? '') : request.email;
      const code = field({
        label: t.code.label,
        input: {
          type: 'text',
          name: 'code',
          inputmode: 'numeric',
          autocomplete: 'one-time-code',
          pattern: '[0-9]*',
          maxlength: sent.codeLength,
          required: true,
          spellcheck: 'false',
          class: 'code-input',
        },
      });
      const rememberId = uid('remember');
      const remember = h('input', { type: 'checkbox', id: rememberId, name: 'rememberMe', 'aria-describedby': `${rememberId}-hint` });
      const submit = h('button', { type: 'submit', class: 'primary' }, t.code.submit);
      const form = h(
        'form',
        { novalidate: true },
        code.wrapper,
        h(
          'div',
          { class: 'check' },
          remember,
          h('label', { for: rememberId }, t.code.remember),
          h('p', { class: 'hint', id: `${rememberId}-hint` }, t.code.rememberHint(formatDuration(t, config.rememberMeMaxAge))),
        ),
        alert.element,
        submit,
      );

      const resend = h('button', { type: 'button', class: 'secondary' }, t.code.resend);
      const wait = h('p', { class: 'hint wait', hidden: true });
      const resent = h('p', { class: 'notice', role: 'status', hidden: true });
      const startCooldown = (seconds: number) => {
        if (seconds <= 0) return;
        resend.disabled = true;
        wait.hidden = false;
        countdown(
          seconds,
          resend,
          (left) => (wait.textContent = t.code.resendIn(formatDuration(t, left))),
          () => {
            resend.disabled = false;
            wait.hidden = true;
          },
        );
      };
      startCooldown(config.limits.perNumberInterval);

      resend.addEventListener('click', () => {
        alert.clear();
        resent.hidden = true;
        void (async () => {
          const outcome = await busy(resend, t.signIn.sending, () =>
            reader.api.requestCode(request).then(
              () => undefined,
              (error: unknown) => error,
            ),
          );
          if (outcome === undefined) {
            resent.textContent = t.code.resent;
            resent.hidden = false;
            code.input.value = '';
            code.input.focus();
            startCooldown(config.limits.perNumberInterval);
            return;
          }
          alert.show(t, outcome);
          if (isCode(outcome, 'sms_rate_limit')) {
            alert.say(t.errors.sms_rate_limit);
            startCooldown(outcome.retryAfter ?? config.limits.perNumberInterval);
          }
        })();
      });

      form.addEventListener('submit', (event) => {
        event.preventDefault();
        alert.clear();
        clearInvalid(code.input);
        const value = code.input.value.replace(/\s+/g, '');
        if (!/^\d+$/.test(value)) {
          alert.say(sent.method === 'email' ? t.errors.invalid_code_or_email : t.errors.incorrect_code);
          return flagInvalid(code.input);
        }
        void (async () => {
          const outcome = await busy(submit, t.code.checking, () =>
            reader.api.verify(value, remember.checked).then(
              (signedIn) => {
                reader.email = signedIn.email;
              },
              (error: unknown) => error,
            ),
          );
          if (outcome === undefined) return messageScreen(reader);
          alert.show(t, outcome);
          if (isCode(outcome, 'expired_code')) {
            // A new code is the only way on: put the reader on the button that gets one.
            code.input.value = '';
            code.input.setAttribute('aria-invalid', 'true');
            if (!resend.disabled) resend.focus();
          } else {
            flagInvalid(code.input);
          }
        })();
      });

      const other = h('button', { type: 'button', class: 'link' }, t.code.otherAddress);
      other.addEventListener('click', () => reader.show(signInScreen(reader, request)));

      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.code.title),
        h(
          'p',
          {},
          sent.method === 'sms' ? t.code.sentSms(sent.codeLength, destination) : t.code.sentEmail(sent.codeLength, destination),
          ' ',
          t.code.validFor(formatDuration(t, sent.expiresIn)),
        ),
        form,
        h('div', { class: 'resend' }, resend, wait, resent),
        other,
      );
    },
  };
}
