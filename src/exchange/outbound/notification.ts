import MailComposer from 'nodemailer/lib/mail-composer';

export interface Notification {
  from: string;
  to: string;
  /** Who sent the sealed message, as the seal service read it from the message. */
  sender: string;
  link: string;
  method: 'sms' | 'email';
  sealedId: string;
}

/**
 * The email that tells a recipient a sealed message waits for them. The original subject is left out on
 * purpose: the notification travels as ordinary email, and a subject can be as confidential as the body
 * it seals. `Auto-Submitted` (RFC 3834) keeps auto-responders from answering it.
 */
export async function composeNotification(notification: Notification): Promise<Buffer> {
  const sender = notification.sender.replace(/[\r\n]+/g, ' ').trim().slice(0, 200) || 'someone';
  const how =
    notification.method === 'sms'
      ? 'To open it, sign in with a one-time code that we send by SMS to your mobile number.'
      : 'To open it, sign in with a one-time code that we send to this email address.';
  const text = [
    'Hello,',
    '',
    `${sender} has sent you a sealed message. It is stored encrypted and can only be read after you sign in.`,
    '',
    'Read it here:',
    notification.link,
    '',
    how,
    '',
    'If you did not expect a message from this sender, you can ignore this email.',
    '',
  ].join('\n');
  const html = [
    '<!doctype html><html><body style="font-family: sans-serif; line-height: 1.5">',
    `<p>Hello,</p>`,
    `<p>${escapeHtml(sender)} has sent you a sealed message. It is stored encrypted and can only be read after you sign in.</p>`,
    `<p><a href="${escapeHtml(notification.link)}">Read the sealed message</a></p>`,
    `<p>${escapeHtml(how)}</p>`,
    `<p style="color: #666">If you did not expect a message from this sender, you can ignore this email.<br>${escapeHtml(notification.link)}</p>`,
    '</body></html>',
  ].join('\n');
  return new MailComposer({
    from: notification.from,
    to: notification.to,
    subject: `A sealed message from ${sender} is waiting for you`,
    text,
    html,
    headers: { 'Auto-Submitted': 'auto-generated', 'X-Sealpost-Sealed-Id': notification.sealedId },
  })
    .compile()
    .build();
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
