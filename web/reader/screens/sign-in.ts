import type { CodeRequest, Method } from '../api.ts';
import { alertBox, type Reader, type Screen } from '../app.ts';
import { h } from '../dom.ts';
import { isCode, isEnded } from '../errors.ts';
import { messageEnd } from './status.ts';
import { formatDuration } from '../format.ts';
import { busy, clearInvalid, countdown, field, flagInvalid, messageCard } from './parts.ts';

/**
 * First screen: who sent what, then the reader's email address (and mobile number where the
 * recipient's method is sms) to send a code to.
 */
export function signInScreen(reader: Reader, prefill: Partial<CodeRequest> = {}): Screen {
  const { t, config } = reader;
  const methods: Method[] = config.methods && config.methods.length > 0 ? config.methods : ['sms', 'email'];
  const sms = methods.includes('sms');
  const both = sms && methods.includes('email');

  return {
    name: 'sign-in',
    title: t.signIn.title,
    render() {
      const alert = alertBox();
      const email = field({
        label: t.signIn.email,
        hint: t.signIn.emailHint,
        input: {
          type: 'email',
          name: 'email',
          autocomplete: 'email',
          required: true,
          spellcheck: 'false',
          autocapitalize: 'off',
          value: prefill.email,
        },
      });
      const mobile = sms
        ? field({
            label: both ? t.signIn.mobileOptional : t.signIn.mobile,
            hint: t.signIn.mobileHint,
            input: {
              type: 'tel',
              name: 'mobile',
              autocomplete: 'tel',
              inputmode: 'tel',
              required: !both,
              value: prefill.mobile,
            },
          })
        : undefined;
      const submit = h('button', { type: 'submit', class: 'primary' }, t.signIn.send);
      // The countdown is not a live region: read out every second it would drown everything else.
      const wait = h('p', { class: 'hint wait', hidden: true });
      const form = h('form', { novalidate: true }, email.wrapper, mobile?.wrapper, alert.element, submit, wait);

      form.addEventListener('submit', (event) => {
        event.preventDefault();
        alert.clear();
        clearInvalid(email.input, ...(mobile ? [mobile.input] : []));
        const address = email.input.value.trim();
        const number = mobile?.input.value.trim() ?? '';
        if (!address || !email.input.checkValidity()) {
          alert.say(t.errors.invalid_email);
          return flagInvalid(email.input);
        }
        if (mobile && !both && !number) {
          alert.say(t.errors.invalid_mobile);
          return flagInvalid(mobile.input);
        }
        const method: Method = both ? (number ? 'sms' : 'email') : sms ? 'sms' : 'email';
        const request: CodeRequest = {
          messageId: reader.messageId,
          email: address,
          method,
          ...(method === 'sms' ? { mobile: number } : {}),
        };
        void (async () => {
          const outcome = await busy(submit, t.signIn.sending, () =>
            reader.api.requestCode(request).then(
              (sent) => ({ sent, error: undefined }),
              (error: unknown) => ({ sent: undefined, error }),
            ),
          );
          if (outcome.sent) return reader.go.code(request, outcome.sent);
          const { error } = outcome;
          // The message ended, or was withdrawn for this address: no code came, and none will.
          if (isEnded(error)) return reader.go.ended(messageEnd(error), false);
          alert.show(t, error);
          if (isCode(error, 'forbidden_auth_method')) {
            alert.say(method === 'email' ? t.methodHint.needsMobile : t.methodHint.needsEmail);
            if (mobile) flagInvalid(mobile.input);
          } else if (isCode(error, 'invalid_mobile', 'email_and_mobile_mismatch') && mobile) {
            flagInvalid(mobile.input);
          } else if (isCode(error, 'invalid_email', 'unauthorized_user')) {
            flagInvalid(email.input);
          } else if (isCode(error, 'sms_rate_limit') && error.retryAfter) {
            // The button waits as long as the server says; the sentence counts down with it.
            alert.say(t.errors.sms_rate_limit);
            submit.disabled = true;
            wait.hidden = false;
            countdown(
              error.retryAfter,
              submit,
              (left) => (wait.textContent = t.code.resendIn(formatDuration(t, left))),
              () => {
                submit.disabled = false;
                wait.hidden = true;
                alert.clear();
              },
            );
          }
        })();
      });

      // Before sign-in GET /v1/config names no subject unless READER_SUBJECT_BEFORE_SIGN_IN is set.
      const subject = config.subject === undefined ? undefined : config.subject || t.signIn.noSubject;
      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.signIn.title),
        config.sender !== undefined ? messageCard(config.sender, t.signIn.from, subject, t.signIn.subject) : null,
        reader.notice ? h('p', { class: 'notice', role: 'status' }, takeNotice(reader)) : null,
        h('p', {}, both ? t.signIn.introBoth : sms ? t.signIn.introSms : t.signIn.introEmail),
        form,
      );
    },
  };
}

function takeNotice(reader: Reader): string {
  const notice = reader.notice ?? '';
  reader.notice = undefined;
  return notice;
}
