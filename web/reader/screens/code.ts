import type { CodePending, CodeRequest, CodeSent } from '../api.ts';
import { alertBox, type Reader, type Screen } from '../app.ts';
import { h, uid } from '../dom.ts';
import { errorText, isCode, isEnded } from '../errors.ts';
import { messageEnd } from './status.ts';
import { formatDuration } from '../format.ts';
import { busy, clearInvalid, countdown, field, flagInvalid } from './parts.ts';

/**
 * Second screen: the code field (numeric keyboard, one-time-code autofill), "keep me signed in", and
 * a resend button that waits out the per-number interval (or the server's Retry-After). After a reload
 * (`request` unknown, `earlier` from GET /v1/config) it says where and when the code went; a new code then
 * goes to the same place (POST /v1/auth/code/resend) without anything typed again.
 */
export function codeScreen(
  reader: Reader,
  request: CodeRequest | undefined,
  sent: CodeSent,
  earlier?: CodePending,
  shownAt = Date.now(),
): Screen {
  const { t, config } = reader;
  const sendAgain = () => (request ? reader.api.requestCode(request) : reader.api.resendCode(reader.messageId));
  return {
    name: 'code',
    title: t.code.title,
    render() {
      const alert = alertBox();
      const destination = earlier
        ? earlier.destination
        : sent.method === 'sms'
          ? (request?.mobile ?? '')
          : (request?.email ?? '');
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
      const remember = h('input', {
        type: 'checkbox',
        id: rememberId,
        name: 'rememberMe',
        'aria-describedby': `${rememberId}-hint`,
      });
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
          h(
            'p',
            { class: 'hint', id: `${rememberId}-hint` },
            t.code.rememberHint(formatDuration(t, config.rememberMeMaxAge)),
          ),
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
      // After a reload the interval runs from when the code was sent, not from now; drawn again in another
      // language, from when the screen was first shown.
      const sentAt = earlier ? Date.parse(earlier.sentAt) : shownAt;
      const sentAgo = Math.max(0, Math.floor((Date.now() - sentAt) / 1000));
      startCooldown(config.limits.perNumberInterval - (Number.isFinite(sentAgo) ? sentAgo : 0));

      /** The code field and its button, usable or not (a void or expired code cannot be tried again). */
      const usable = (yes: boolean) => {
        code.input.disabled = !yes;
        submit.disabled = !yes;
      };
      const requestNew = (button: HTMLButtonElement) => {
        alert.clear();
        resent.hidden = true;
        void (async () => {
          const outcome = await busy(button, t.signIn.sending, () =>
            sendAgain().then(
              () => undefined,
              (error: unknown) => error,
            ),
          );
          if (outcome === undefined) {
            usable(true);
            resent.textContent = t.code.resent;
            resent.hidden = false;
            code.input.value = '';
            code.input.removeAttribute('aria-invalid');
            code.input.focus();
            startCooldown(config.limits.perNumberInterval);
            return;
          }
          if (isEnded(outcome)) return reader.go.ended(messageEnd(outcome), false);
          alert.show(t, outcome);
          if (isCode(outcome, 'sms_rate_limit')) {
            alert.say(t.errors.sms_rate_limit);
            startCooldown(outcome.retryAfter ?? config.limits.perNumberInterval);
          }
        })();
      };
      resend.addEventListener('click', () => requestNew(resend));

      /** The code cannot be used any more (too many wrong tries, expired): say why, offer a new one right there. */
      const codeGone = (error: unknown) => {
        usable(false);
        code.input.value = '';
        code.input.setAttribute('aria-invalid', 'true');
        const again = h('button', { type: 'button', class: 'primary new-code' }, t.code.newCode);
        again.addEventListener('click', () => requestNew(again));
        alert.say(errorText(t, error));
        alert.element.append(again);
        again.focus();
      };

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
                reader.config = { ...reader.config, signedIn: true, email: signedIn.email, method: signedIn.method };
              },
              (error: unknown) => error,
            ),
          );
          if (outcome === undefined) return reader.go.message();
          // A new code is the only way on: the button that gets one is put right under the sentence.
          if (isCode(outcome, 'expired_code', 'code_attempts_exceeded')) return codeGone(outcome);
          alert.show(t, outcome);
          const left = isCode(outcome, 'incorrect_code', 'invalid_code_or_email')
            ? outcome.details.attemptsLeft
            : undefined;
          if (left !== undefined) alert.say(`${errorText(t, outcome)} ${t.code.attemptsLeft(left)}`);
          flagInvalid(code.input);
        })();
      });

      const other = h('button', { type: 'button', class: 'link' }, t.code.otherAddress);
      other.addEventListener('click', () => reader.go.signIn(request ?? (earlier ? { email: earlier.email } : {})));

      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.code.title),
        h(
          'p',
          {},
          ...(earlier
            ? [
                sent.method === 'sms'
                  ? t.code.sentEarlierSms(destination, formatTime(earlier.sentAt, t.lang))
                  : t.code.sentEarlierEmail(destination, formatTime(earlier.sentAt, t.lang)),
                ' ',
                t.code.stillValidFor(formatDuration(t, earlier.expiresIn)),
              ]
            : [
                sent.method === 'sms'
                  ? t.code.sentSms(sent.codeLength, destination)
                  : t.code.sentEmail(sent.codeLength, destination),
                ' ',
                t.code.validFor(formatDuration(t, sent.expiresIn)),
              ]),
        ),
        form,
        h('div', { class: 'resend' }, resend, wait, resent),
        other,
      );
    },
  };
}

function formatTime(value: string, lang: string): string {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toLocaleTimeString(lang, { hour: '2-digit', minute: '2-digit' });
}
