import type { CodeRequest, Method } from '../api.ts';
import { ApiError } from '../api-error.ts';
import type { Reader, Screen } from '../app.ts';
import { h } from '../dom.ts';
import { isCode, isEnded } from '../errors.ts';
import { keepError, keptError } from '../kept.ts';
import { messageEnd } from './status.ts';
import { busy, clearInvalid, field, flagInvalid, messageCard, messages, sayRefusal } from './parts.ts';

/**
 * First screen: who sent what, then the reader's email address (and mobile number where the
 * recipient's method is sms) to send a code to. What was typed and the error said are kept (reader.kept), so that
 * a language switch or a reload shows them again.
 */
export function signInScreen(reader: Reader): Screen {
  const { t, config } = reader;
  const methods: Method[] = config.methods && config.methods.length > 0 ? config.methods : ['sms', 'email'];
  const sms = methods.includes('sms');
  const both = sms && methods.includes('email');
  reader.kept.signIn ??= {};
  const kept = reader.kept.signIn;

  return {
    name: 'sign-in',
    title: t.signIn.title,
    render() {
      const box = messages();
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
          value: kept.email,
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
              value: kept.mobile,
            },
          })
        : undefined;
      const remember = () => {
        kept.email = email.input.value;
        if (mobile) kept.mobile = mobile.input.value;
        reader.save();
      };
      email.input.addEventListener('input', remember);
      mobile?.input.addEventListener('input', remember);
      const submit = h('button', { type: 'submit', class: 'primary' }, t.signIn.send);
      const form = h('form', { novalidate: true }, email.wrapper, mobile?.wrapper, submit, box.element);

      /** Says `error` where it belongs, and keeps it for a redraw. */
      const say = (error: unknown, method: Method) => {
        kept.error = keepError(error);
        reader.save();
        sayRefusal(t, box, error, submit);
        if (isCode(error, 'forbidden_auth_method')) {
          box.alert.say(method === 'email' ? t.methodHint.needsMobile : t.methodHint.needsEmail);
          if (mobile) flagInvalid(mobile.input);
        } else if (isCode(error, 'invalid_mobile', 'email_and_mobile_mismatch') && mobile) {
          flagInvalid(mobile.input);
        } else if (isCode(error, 'invalid_email', 'unauthorized_user')) {
          flagInvalid(email.input);
        }
      };
      const methodOf = (number: string): Method => (both ? (number ? 'sms' : 'email') : sms ? 'sms' : 'email');

      form.addEventListener('submit', (event) => {
        event.preventDefault();
        // The alert is below the button: clearing it moves nothing under the pointer.
        box.alert.clear();
        clearInvalid(email.input, ...(mobile ? [mobile.input] : []));
        const address = email.input.value.trim();
        const number = mobile?.input.value.trim() ?? '';
        if (!address || !email.input.checkValidity())
          return say(new ApiError(400, 'invalid_email', undefined, undefined, 'invalid_email'), 'email');
        if (mobile && !both && !number)
          return say(new ApiError(400, 'invalid_mobile', undefined, undefined, 'invalid_mobile'), 'sms');
        const method = methodOf(number);
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
          if (outcome.sent) {
            kept.error = undefined;
            reader.kept.code = { sentAt: Date.now() };
            reader.save();
            return reader.go.code(request, outcome.sent);
          }
          // The message ended, or was withdrawn for this address: no code came, and none will.
          if (isEnded(outcome.error)) return reader.go.ended(messageEnd(outcome.error), false);
          say(outcome.error, method);
        })();
      });

      // Drawn again (another language, a reload): the error said before, and its wait where it has one.
      const earlier = keptError(kept.error);
      if (earlier) say(earlier, methodOf(kept.mobile?.trim() ?? ''));
      else kept.error = undefined;

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
