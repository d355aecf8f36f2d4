import MailComposer from 'nodemailer/lib/mail-composer';
import type { SignInMethodName } from '../../contracts/seal.ts';
import type { Language } from '../../kernel/languages.ts';
import { NOTIFICATION_TEXTS } from './texts/index.ts';

export interface Notification {
  from: string;
  to: string;
  /** Who sent the sealed message, as the seal service read it from the message. */
  sender: string;
  link: string;
  method: SignInMethodName;
  sealedId: string;
  /** The recipient's language (X-Sealpost-Language), else NOTIFY_DEFAULT_LANGUAGE. */
  language: Language;
  /** When the message ends (the seal answer's expiresAt): the notification says until when it can be read. */
  expiresAt?: Date;
}

/**
 * The email that tells a recipient a sealed message waits for them. The original subject is left out on
 * purpose: the notification travels as ordinary email, and a subject can be as confidential as the body
 * it seals. `Auto-Submitted` (RFC 3834) keeps auto-responders from answering it.
 */
export async function composeNotification(notification: Notification): Promise<Buffer> {
  const t = NOTIFICATION_TEXTS[notification.language];
  const sender =
    notification.sender
      .replace(/[\r\n]+/g, ' ')
      .trim()
      .slice(0, 200) || t.someone;
  const how = notification.method === 'sms' ? t.howSms : t.howEmail;
  const until = notification.expiresAt && t.until(endDate(notification.expiresAt, notification.language));
  const text = [
    t.greeting,
    '',
    t.sent(sender),
    '',
    t.readHere,
    notification.link,
    ...(until ? ['', until] : []),
    '',
    how,
    '',
    t.ignore,
    '',
  ].join('\n');
  const html = [
    `<!doctype html><html lang="${notification.language}"><body style="font-family: sans-serif; line-height: 1.5">`,
    `<p>${escapeHtml(t.greeting)}</p>`,
    `<p>${escapeHtml(t.sent(sender))}</p>`,
    `<p><a href="${escapeHtml(notification.link)}">${escapeHtml(t.linkText)}</a></p>`,
    ...(until ? [`<p>${escapeHtml(until)}</p>`] : []),
    `<p>${escapeHtml(how)}</p>`,
    `<p style="color: #666">${escapeHtml(t.ignore)}<br>${escapeHtml(notification.link)}</p>`,
    '</body></html>',
  ].join('\n');
  return new MailComposer({
    from: notification.from,
    to: notification.to,
    subject: t.subject(sender),
    text,
    html,
    headers: {
      'Auto-Submitted': 'auto-generated',
      // RFC 3282: lets mail clients offer translation and screen readers pick the voice.
      'Content-Language': notification.language,
      'X-Sealpost-Sealed-Id': notification.sealedId,
    },
  })
    .compile()
    .build();
}

/**
 * A message's end as its recipient reads it: the long date and short time of their language, in UTC and
 * saying so, as the auth service words the time of a mobile-number change. Sealpost has no time-zone setting,
 * and the recipient's zone is unknown to it; a recipient in any zone can work out UTC, and a time shown in
 * the organisation's zone without naming it would be wrong for the others by hours.
 */
export function endDate(at: Date, language: Language): string {
  const format = new Intl.DateTimeFormat(language, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });
  return `${format.format(at)} UTC`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
