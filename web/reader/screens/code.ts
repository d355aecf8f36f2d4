import type { CodeGone, CodePending, CodeRequest, CodeSent } from '../api.ts';
import type { Reader, Screen } from '../app.ts';
import { ApiError } from '../api-error.ts';
import { h, uid } from '../dom.ts';
import { errorText, isCode, isEnded } from '../errors.ts';
import { formatDuration } from '../format.ts';
import { keepError, keptError } from '../kept.ts';
import { messageEnd } from './status.ts';
import { busy, clearInvalid, field, flagInvalid, holdBack, messages, sayRefusal } from './parts.ts';

/**
 * Second screen: the code field (numeric keyboard, one-time-code autofill), "keep me signed in", and
 * a resend button that waits out the per-number interval (or the server's Retry-After). After a reload
 * (`request` unknown, `earlier` from GET /v1/config) it says where and when the code went; a new code then
 * goes to the same place (POST /v1/auth/code/resend) without anything typed again. A code that can no longer be
 * tried (expired, voided) says so once, and its one action is the resend button. The error said, the code gone and
 * the wait are kept (reader.kept.code), so that a language switch or a reload shows them again.
 */
export function codeScreen(
  reader: Reader,
  request: CodeRequest | undefined,
  sent: CodeSent,
  earlier?: CodePending | CodeGone,
): Screen {
  const { t, config } = reader;
  const sendAgain = () => (request ? reader.api.requestCode(request) : reader.api.resendCode(reader.messageId));
  // Set by the sign-in form, or after a reload from what the server told (main.ts).
  reader.kept.code ??= { sentAt: Date.now() };
  const kept = reader.kept.code;
  return {
    name: 'code',
    title: t.code.title,
    render() {
      const box = messages();
      const destination = earlier
        ? earlier.destination
        : sent.method === 'sms'
          ? (request?.mobile ?? '')
          : (request?.email ?? '');
      const validity = (expiresIn: number, reloaded: boolean) =>
        reloaded ? t.code.stillValidFor(formatDuration(t, expiresIn)) : t.code.validFor(formatDuration(t, expiresIn));
      const code = field({
        label: t.code.label,
        hint:
          earlier && 'expiresIn' in earlier && !kept.resent
            ? validity(earlier.expiresIn, true)
            : validity(kept.resent ? config.codeExpiresIn : sent.expiresIn, false),
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
      const hint = code.wrapper.querySelector<HTMLElement>('.hint');
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
        submit,
      );

      const resend = h('button', { type: 'button', class: 'secondary' }, t.code.resend);
      // The interval runs from when the code was sent (kept, or told by the server after a reload), not from now.
      const startCooldown = (from: number) => {
        const ago = Math.max(0, Math.floor((Date.now() - from) / 1000));
        holdBack(t, resend, box.wait, config.limits.perNumberInterval - ago, t.code.resendIn);
      };
      startCooldown(kept.sentAt);

      /** The code field and its button, usable or not (a void or expired code cannot be tried again). */
      const usable = (yes: boolean) => {
        code.input.disabled = !yes;
        submit.disabled = !yes;
        // Its space is kept, so that nothing moves: the validity no longer holds for a code that is gone.
        hint?.classList.toggle('spent', !yes);
        // The one action left is the new code: the same button, in the same place, made the primary one.
        resend.className = yes ? 'secondary' : 'primary';
      };
      /** The code cannot be used any more (too many wrong tries, expired): say why once, the resend is the way on. */
      const codeGone = (reason: 'expired' | 'voided') => {
        kept.gone = reason;
        kept.error = undefined;
        kept.resent = false;
        reader.save();
        usable(false);
        code.input.value = '';
        code.input.setAttribute('aria-invalid', 'true');
        box.done(undefined);
        const errorCode = reason === 'expired' ? 'expired_code' : 'code_attempts_exceeded';
        box.alert.say(errorText(t, new ApiError(401, errorCode, undefined, undefined, errorCode)));
        resend.focus();
      };

      resend.addEventListener('click', () => {
        box.alert.clear();
        box.done(undefined);
        void (async () => {
          const outcome = await busy(resend, t.signIn.sending, () =>
            sendAgain().then(
              () => undefined,
              (error: unknown) => error,
            ),
          );
          if (outcome === undefined) {
            Object.assign(kept, { sentAt: Date.now(), resent: true, gone: undefined, error: undefined });
            reader.kept.code = kept;
            reader.save();
            usable(true);
            if (hint) hint.textContent = validity(config.codeExpiresIn, false);
            box.done(t.code.resent);
            code.input.value = '';
            code.input.removeAttribute('aria-invalid');
            code.input.focus();
            startCooldown(kept.sentAt);
            return;
          }
          if (isEnded(outcome)) return reader.go.ended(messageEnd(outcome), false);
          kept.error = keepError(outcome);
          reader.save();
          sayRefusal(t, box, outcome, resend);
        })();
      });

      form.addEventListener('submit', (event) => {
        event.preventDefault();
        // The sentences are below every button: clearing them moves nothing under the pointer.
        box.alert.clear();
        clearInvalid(code.input);
        const value = code.input.value.replace(/\s+/g, '');
        if (!/^\d+$/.test(value)) {
          box.alert.say(sent.method === 'email' ? t.errors.invalid_code_or_email : t.errors.incorrect_code);
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
          if (outcome === undefined) {
            reader.forget(true);
            return reader.go.message();
          }
          if (isCode(outcome, 'expired_code')) return codeGone('expired');
          if (isCode(outcome, 'code_attempts_exceeded')) return codeGone('voided');
          box.done(undefined);
          kept.resent = false;
          kept.error = keepError(outcome);
          reader.save();
          sayRefusal(t, box, outcome);
          flagInvalid(code.input);
        })();
      });

      const other = h('button', { type: 'button', class: 'link' }, t.code.otherAddress);
      other.addEventListener('click', () => {
        reader.kept.code = undefined;
        reader.save();
        reader.go.signIn(request ?? (earlier ? { email: earlier.email } : {}));
      });

      // Drawn again (another language, a reload): what the screen said before.
      if (kept.gone) codeGone(kept.gone);
      else {
        const said = keptError(kept.error);
        if (said) {
          // A limit's wait holds the resend button back again, for what is left of it.
          sayRefusal(t, box, said, resend);
          code.input.setAttribute('aria-invalid', 'true');
        }
        if (kept.resent) box.done(t.code.resent);
      }

      const sentAt = earlier?.sentAt;
      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.code.title),
        h(
          'p',
          {},
          sentAt
            ? sent.method === 'sms'
              ? t.code.sentEarlierSms(destination, formatTime(sentAt, t.lang))
              : t.code.sentEarlierEmail(destination, formatTime(sentAt, t.lang))
            : sent.method === 'sms'
              ? t.code.sentSms(sent.codeLength, destination)
              : t.code.sentEmail(sent.codeLength, destination),
        ),
        // Beside the address it corrects, above the form: the sign-in form it leads to has its send button lower
        // down, so a second click of a double-click lands on a field there, never on "Send me a code".
        h('p', { class: 'other-address' }, other),
        form,
        h('div', { class: 'resend' }, resend),
        box.element,
      );
    },
  };
}

function formatTime(value: string, lang: string): string {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toLocaleTimeString(lang, { hour: '2-digit', minute: '2-digit' });
}
