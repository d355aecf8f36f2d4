import { ApiError } from '../../api-error.ts';
import { alertBox, type Screen } from '../../app.ts';
import { h, uid } from '../../dom.ts';
import { formatDate } from '../../format.ts';
import { busy, clearInvalid, flagInvalid } from '../../screens/parts.ts';
import type { RecipientStatus, SentMessage } from '../api.ts';
import type { SenderPage } from '../page.ts';
import type { SenderTexts } from '../texts/index.ts';
import { signedInBar } from './parts.ts';

/**
 * One sealed message: per recipient what they did (notified, opened, failed sign-ins, downloads, replies,
 * withdrawn), its end date, and what the sender can do: withdraw for everyone or for one recipient (each
 * after a confirmation that names whom), move the end date, download the trail.
 */
export function detailScreen(page: SenderPage, message: SentMessage, notice?: (t: SenderTexts) => string): Screen {
  const { t } = page;
  const subject = message.subject || t.detail.noSubject;
  const ended = message.end !== undefined;
  return {
    name: 'sender-message',
    title: subject,
    render() {
      const back = h('button', { type: 'button', class: 'link back' }, `← ${t.detail.back}`);
      back.addEventListener('click', () => void page.go.list());

      const facts = h(
        'dl',
        { class: 'headers' },
        h('div', {}, h('dt', {}, t.detail.sealed), h('dd', {}, formatDate(message.sealedAt, t.lang))),
        h('div', {}, h('dt', {}, t.detail.endDate), h('dd', { class: 'end-date' }, endText(t, message))),
      );

      const recipients = h(
        'section',
        { 'aria-labelledby': 'recipients-title' },
        h('h2', { id: 'recipients-title' }, t.detail.recipients),
        h('ul', { class: 'recipients' }, ...message.recipients.map((r) => recipientItem(page, message, r, ended))),
      );

      return h(
        'section',
        { class: 'card sender' },
        signedInBar(page),
        back,
        h('h1', {}, subject),
        notice ? h('p', { class: 'notice', role: 'status' }, notice(t)) : null,
        facts,
        recipients,
        ended ? null : withdrawAll(page, message),
        ended ? null : endDateForm(page, message),
        trailLinks(page, message),
      );
    },
  };
}

function endText(t: SenderTexts, message: SentMessage): string {
  if (message.end)
    return message.end.reason === 'withdrawn'
      ? t.detail.withdrawnOn(formatDate(message.end.at, t.lang))
      : t.detail.expiredOn(formatDate(message.end.at, t.lang));
  return message.expiresAt ? formatDate(message.expiresAt, t.lang) : t.detail.noEndDate;
}

/** How the recipient signs in, and where their number came from (docs/design.md#contacts). */
function signInText(t: SenderPage['t'], r: RecipientStatus): string {
  if (r.method !== 'sms') return t.detail.signInEmail;
  return r.mobileSource ? t.detail.signInSms[r.mobileSource] : t.detail.signInSms.header;
}

/** One recipient's timeline, and their own withdrawal while the message and they can still read. */
function recipientItem(page: SenderPage, message: SentMessage, r: RecipientStatus, ended: boolean): HTMLElement {
  const { t } = page;
  const when = (value: string | undefined, otherwise: string) => (value ? formatDate(value, t.lang) : otherwise);
  const row = (label: string, value: string) => h('div', {}, h('dt', {}, label), h('dd', {}, value));
  const timeline = h(
    'dl',
    { class: 'timeline' },
    r.method ? row(t.detail.signIn, signInText(t, r)) : null,
    row(t.detail.notified, when(r.notifiedAt, t.detail.not)),
    row(t.detail.firstOpened, when(r.firstOpenedAt, t.detail.never)),
    row(t.detail.lastOpened, when(r.lastOpenedAt, t.detail.never)),
    row(t.detail.failedSignIns, String(r.failedSignIns)),
    row(t.detail.downloads, String(r.downloads)),
    row(t.detail.replies, String(r.replies)),
    r.withdrawnAt ? row(t.detail.withdrawn, formatDate(r.withdrawnAt, t.lang)) : null,
  );
  const withdraw =
    ended || r.withdrawnAt
      ? null
      : confirmStep(page, {
          trigger: t.withdraw.one(r.email),
          question: t.withdraw.confirmOne(r.email),
          confirm: t.withdraw.confirmOneButton(r.email),
          run: (reason) => page.api.withdraw(message.id, reason, r.email),
          done: (t) => t.withdraw.doneOne(r.email),
          messageId: message.id,
        });
  return h('li', { class: 'recipient' }, h('h3', {}, r.email), timeline, withdraw);
}

function withdrawAll(page: SenderPage, message: SentMessage): HTMLElement {
  const { t } = page;
  return h(
    'section',
    { 'aria-labelledby': 'withdraw-title' },
    h('h2', { id: 'withdraw-title' }, t.withdraw.title),
    confirmStep(page, {
      trigger: t.withdraw.everyone,
      question: t.withdraw.confirmEveryone,
      confirm: t.withdraw.confirm,
      run: (reason) => page.api.withdraw(message.id, reason),
      done: (t) => t.withdraw.doneEveryone,
      messageId: message.id,
    }),
  );
}

/**
 * A withdrawal in two steps, inline: the first button stays where it is and opens, below it, the question
 * that names whom, the reason (B keeps it), and the confirming button after them. So the confirming button
 * never appears where a button was a moment before: a double click cannot withdraw.
 */
function confirmStep(
  page: SenderPage,
  step: {
    trigger: string;
    question: string;
    confirm: string;
    run: (reason: string) => Promise<unknown>;
    done: (t: SenderTexts) => string;
    messageId: string;
  },
): HTMLElement {
  const { t } = page;
  const panelId = uid('confirm');
  const reasonId = uid('reason');
  const trigger = h(
    'button',
    { type: 'button', class: 'secondary warn', 'aria-expanded': 'false', 'aria-controls': panelId },
    step.trigger,
  );
  const reason = h('input', {
    id: reasonId,
    type: 'text',
    name: `reason-${panelId}`,
    maxlength: 500,
    required: true,
    'aria-describedby': `${reasonId}-hint`,
  });
  const alert = alertBox();
  const cancel = h('button', { type: 'button', class: 'secondary' }, t.withdraw.cancel);
  const confirm = h('button', { type: 'submit', class: 'destructive' }, step.confirm);
  const panel = h(
    'form',
    { id: panelId, class: 'confirm', hidden: true, novalidate: true },
    h('p', { class: 'confirm-question' }, step.question),
    h(
      'div',
      { class: 'field' },
      h('label', { for: reasonId }, t.withdraw.reason),
      h('p', { class: 'hint', id: `${reasonId}-hint` }, t.withdraw.reasonHint),
      reason,
    ),
    alert.element,
    h('div', { class: 'confirm-buttons' }, cancel, confirm),
  );
  const open = (yes: boolean) => {
    panel.hidden = !yes;
    trigger.setAttribute('aria-expanded', String(yes));
    if (yes) reason.focus();
    else {
      alert.clear();
      trigger.focus();
    }
  };
  trigger.addEventListener('click', () => open(panel.hidden === true));
  cancel.addEventListener('click', () => open(false));
  panel.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') open(false);
  });
  panel.addEventListener('submit', (event) => {
    event.preventDefault();
    alert.clear();
    clearInvalid(reason);
    const text = reason.value.trim();
    if (!text) {
      alert.say(t.withdraw.needReason);
      return flagInvalid(reason);
    }
    void busy(confirm, t.withdraw.working, async () => {
      try {
        await step.run(text);
      } catch (error) {
        alert.show(t, error);
        return;
      }
      await page.go.detail(step.messageId, step.done);
    });
  });
  return h('div', { class: 'withdraw' }, trigger, panel);
}

/** The end date: a local date and time; B refuses one beyond SEAL_MAX_EXPIRY with a 400 whose message is shown. */
function endDateForm(page: SenderPage, message: SentMessage): HTMLElement {
  const { t } = page;
  const id = uid('expires');
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const input = h('input', {
    id,
    type: 'datetime-local',
    name: 'expiresAt',
    required: true,
    value: message.expiresAt ? localInput(message.expiresAt) : undefined,
    min: localInput(new Date().toISOString()),
    'aria-describedby': `${id}-hint`,
  });
  const alert = alertBox();
  const save = h('button', { type: 'submit', class: 'secondary' }, t.endDate.save);
  const form = h(
    'form',
    { novalidate: true, class: 'end-date-form' },
    h(
      'div',
      { class: 'field' },
      h('label', { for: id }, t.endDate.label),
      h('p', { class: 'hint', id: `${id}-hint` }, t.endDate.hint(zone)),
      input,
    ),
    alert.element,
    save,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    alert.clear();
    clearInvalid(input);
    const at = new Date(input.value);
    if (!input.value || Number.isNaN(at.getTime())) {
      alert.say(t.endDate.invalid);
      return flagInvalid(input);
    }
    const expiresAt = at.toISOString();
    void busy(save, t.endDate.saving, async () => {
      try {
        await page.api.changeExpiry(message.id, expiresAt);
      } catch (error) {
        alert.show(t, error, t.endDate.refused);
        // The service's own reason (the limit it holds to): in its words, marked as English for screen readers.
        if (error instanceof ApiError && error.status === 400 && error.message)
          alert.element.append(h('p', { class: 'reference', lang: 'en' }, t.endDate.serverSaid(error.message)));
        flagInvalid(input);
        return;
      }
      await page.go.detail(message.id, (t) => t.endDate.saved(formatDate(expiresAt, t.lang)));
    });
  });
  return h(
    'section',
    { 'aria-labelledby': 'end-date-title' },
    h('h2', { id: 'end-date-title' }, t.endDate.title),
    h('p', {}, t.endDate.explain),
    form,
  );
}

/** `2026-12-07T14:30` in the browser's time zone, as a datetime-local input wants it. */
function localInput(iso: string): string {
  const date = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}`
  );
}

function trailLinks(page: SenderPage, message: SentMessage): HTMLElement {
  const { t } = page;
  return h(
    'section',
    { 'aria-labelledby': 'trail-title' },
    h('h2', { id: 'trail-title' }, t.detail.trail),
    h('p', {}, t.detail.trailExplain),
    h(
      'ul',
      { class: 'trail-links' },
      h(
        'li',
        {},
        h('a', { href: page.api.trailUrl(message.id, 'csv'), download: `trail-${message.id}.csv` }, t.detail.trailCsv),
      ),
      h(
        'li',
        {},
        h(
          'a',
          { href: page.api.trailUrl(message.id, 'json'), download: `trail-${message.id}.json` },
          t.detail.trailJson,
        ),
      ),
    ),
  );
}
