import { alertBox, type Screen } from '../../app.ts';
import { h } from '../../dom.ts';
import { isCode } from '../../errors.ts';
import { formatDuration } from '../../format.ts';
import { busy, clearInvalid, countdown, field, flagInvalid } from '../../screens/parts.ts';
import type { SenderPage } from '../page.ts';

/** First screen: the sender's own address, to send a code to by email. */
export function signInScreen(page: SenderPage, prefill?: string): Screen {
  const { t } = page;
  return {
    name: 'sender-sign-in',
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
          value: prefill,
        },
      });
      const submit = h('button', { type: 'submit', class: 'primary' }, t.signIn.send);
      // Not a live region: read out every second it would drown everything else.
      const wait = h('p', { class: 'hint wait', hidden: true });
      const form = h('form', { novalidate: true }, email.wrapper, alert.element, submit, wait);

      form.addEventListener('submit', (event) => {
        event.preventDefault();
        alert.clear();
        clearInvalid(email.input);
        const address = email.input.value.trim();
        if (!address || !email.input.checkValidity()) {
          alert.say(t.errors.invalid_email);
          return flagInvalid(email.input);
        }
        void (async () => {
          const outcome = await busy(submit, t.signIn.sending, () =>
            page.api.requestCode(address).then(
              (sent) => ({ sent, error: undefined }),
              (error: unknown) => ({ sent: undefined, error }),
            ),
          );
          if (outcome.sent) return page.go.code(address, outcome.sent);
          const { error } = outcome;
          alert.show(t, error);
          if (isCode(error, 'invalid_email', 'unauthorized_user')) flagInvalid(email.input);
          else if (isCode(error, 'sms_rate_limit') && error.retryAfter) {
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

      const notice = page.notice;
      page.notice = undefined;
      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.signIn.title),
        notice ? h('p', { class: 'notice', role: 'status' }, notice) : null,
        h('p', {}, t.signIn.intro),
        form,
      );
    },
  };
}
