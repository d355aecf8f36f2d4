import type { MobileStep } from '../api.ts';
import { alertBox, type Reader } from '../app.ts';
import { announce, h } from '../dom.ts';
import { isEnded } from '../errors.ts';
import { busy, clearInvalid, field, flagInvalid } from './parts.ts';
import { messageEnd } from './status.ts';

/**
 * The mobile number change, for a recipient who signs in by SMS: the new number, then a code sent to the
 * current number, then one sent to the new number (the service refuses any other order, so that a session
 * alone cannot take the number over). Folded away under its heading until opened.
 */
export function mobileSection(reader: Reader): HTMLElement | null {
  const { t } = reader;
  if (reader.config.method !== 'sms') return null;
  const body = h('div', { class: 'mobile-change' });
  const alert = alertBox();
  const status = h('p', { class: 'hint', role: 'status' });

  const start = () => {
    const number = field({
      label: t.mobile.newNumber,
      hint: t.mobile.newNumberHint,
      input: { type: 'tel', autocomplete: 'tel', required: true },
    });
    const button = h('button', { type: 'submit' }, t.mobile.start);
    const form = h('form', { novalidate: true }, number.wrapper, alert.element, button);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      clearInvalid(number.input);
      alert.clear();
      void busy(button, t.mobile.starting, async () => {
        try {
          askCode(await reader.api.changeMobile(number.input.value.trim()));
        } catch (error) {
          if (isEnded(error)) return reader.go.ended(messageEnd(error), true);
          alert.show(t, error);
          flagInvalid(number.input);
        }
      });
    });
    body.replaceChildren(h('p', {}, t.mobile.explain), form);
  };

  const askCode = (step: MobileStep) => {
    const code = field({
      label: t.mobile.code,
      hint: t.mobile.codeTo(step.to),
      input: { inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: step.codeLength, required: true },
    });
    const button = h('button', { type: 'submit' }, t.mobile.confirm);
    const form = h('form', { novalidate: true }, code.wrapper, alert.element, button);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      clearInvalid(code.input);
      alert.clear();
      void busy(button, t.mobile.confirming, async () => {
        try {
          const answer = await reader.api.confirmMobile(code.input.value.trim());
          if ('step' in answer) return askCode(answer);
          status.textContent = t.mobile.changed(answer.mobile);
          announce(status.textContent);
          start();
        } catch (error) {
          if (isEnded(error)) return reader.go.ended(messageEnd(error), true);
          alert.show(t, error);
          flagInvalid(code.input);
        }
      });
    });
    body.replaceChildren(form);
    code.input.focus();
  };

  start();
  return h('details', { class: 'card mobile' }, h('summary', {}, h('h2', {}, t.mobile.title)), status, body);
}

/**
 * For a recipient who signed in by email: a number for their later messages, proven by a code sent to it
 * (docs/design.md#contacts). This message keeps its way of signing in. Folded away under its heading until opened.
 */
export function laterMobileSection(reader: Reader): HTMLElement | null {
  const { t } = reader;
  if (reader.config.method !== 'email') return null;
  const body = h('div', { class: 'mobile-change' });
  const alert = alertBox();
  const status = h('p', { class: 'hint', role: 'status' });

  const start = () => {
    const number = field({
      label: t.laterMobile.number,
      hint: t.laterMobile.numberHint,
      input: { type: 'tel', autocomplete: 'tel', required: true },
    });
    const button = h('button', { type: 'submit' }, t.laterMobile.start);
    const form = h('form', { novalidate: true }, number.wrapper, alert.element, button);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      clearInvalid(number.input);
      alert.clear();
      void busy(button, t.laterMobile.starting, async () => {
        try {
          askCode(await reader.api.addLaterMobile(number.input.value.trim()));
        } catch (error) {
          if (isEnded(error)) return reader.go.ended(messageEnd(error), true);
          alert.show(t, error);
          flagInvalid(number.input);
        }
      });
    });
    body.replaceChildren(h('p', {}, t.laterMobile.explain), form);
  };

  const askCode = (sent: { to: string; codeLength: number }) => {
    const code = field({
      label: t.laterMobile.code,
      hint: t.laterMobile.codeTo(sent.to),
      input: { inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: sent.codeLength, required: true },
    });
    const button = h('button', { type: 'submit' }, t.laterMobile.confirm);
    const form = h('form', { novalidate: true }, code.wrapper, alert.element, button);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      clearInvalid(code.input);
      alert.clear();
      void busy(button, t.laterMobile.confirming, async () => {
        try {
          const answer = await reader.api.confirmLaterMobile(code.input.value.trim());
          status.textContent = t.laterMobile.added(answer.mobile);
          announce(status.textContent);
          body.replaceChildren();
        } catch (error) {
          if (isEnded(error)) return reader.go.ended(messageEnd(error), true);
          alert.show(t, error);
          flagInvalid(code.input);
        }
      });
    });
    body.replaceChildren(form);
    code.input.focus();
  };

  start();
  return h('details', { class: 'card mobile' }, h('summary', {}, h('h2', {}, t.laterMobile.title)), status, body);
}
