import MimeNode from 'nodemailer/lib/mime-node';
import type { BounceReport, Envelope } from '../tables.ts';

export interface BounceInput {
  /** SMTP_HOSTNAME: the Reporting-MTA. */
  reportingMta: string;
  /** NOTIFY_FROM: the From header of the bounce (its envelope sender is always `<>`). */
  from: string;
  envelope: Pick<Envelope, 'id' | 'sender' | 'created_at'>;
  report: BounceReport;
  /** The original message's header block, returned as text/rfc822-headers; absent if unreadable. */
  originalHeaders: Buffer | undefined;
}

/**
 * Why a failed message must not be bounced, or undefined when it may. Never to the null sender `<>`
 * (RFC 5321 §4.5.5: that is how bounces and other notifications say "do not answer me"), and never
 * for a message that is itself a bounce — ours (is_bounce) or anybody's (a delivery status report) —
 * so that two systems can never bounce a message back and forth.
 */
export function bounceRefusal(
  envelope: Pick<Envelope, 'sender' | 'is_bounce'>,
  originalHeaders: Buffer | undefined,
): string | undefined {
  if (envelope.sender === '') return 'the sender is the null sender <>';
  if (envelope.is_bounce) return 'the message is itself a bounce';
  if (
    /^content-type:\s*multipart\/report\s*;[^\n]*report-type\s*=\s*"?delivery-status/im.test(unfold(originalHeaders))
  ) {
    return 'the message is itself a delivery status notification';
  }
  return undefined;
}

/**
 * An RFC 3464 delivery status notification: `multipart/report; report-type=delivery-status` with a
 * human-readable part, the machine-readable message/delivery-status part (per-message fields, then one
 * block per failed recipient) and the original headers as text/rfc822-headers (RFC 6522). The body of
 * the original is not returned: the sender has it, and it may be large or confidential.
 */
export async function composeBounce(input: BounceInput): Promise<Buffer> {
  const { envelope, report } = input;
  const root = new MimeNode('multipart/report; report-type=delivery-status');
  root.setHeader({
    From: input.from,
    To: envelope.sender,
    Subject: 'Undelivered Mail Returned to Sender',
    // RFC 3834: an automatic answer, which auto-responders must not answer in turn.
    'Auto-Submitted': 'auto-replied',
  });
  const originalMessageId = headerValue(input.originalHeaders, 'message-id');
  if (originalMessageId) root.setHeader({ 'In-Reply-To': originalMessageId, References: originalMessageId });

  const lines = report.recipients.map(
    (r) => `  <${r.recipient}>: ${r.diagnostic ? r.diagnostic.replace(/^[^;]*;\s*/, '') : r.status}`,
  );
  root
    .createChild('text/plain; charset=utf-8')
    .setContent(
      [
        `This is the mail system at ${input.reportingMta}.`,
        '',
        'Your message could not be delivered to the recipients below.',
        report.reason,
        '',
        ...lines,
        '',
        'The delivery report and the headers of your message are attached.',
        '',
      ].join('\r\n'),
    );

  const perMessage = [
    `Reporting-MTA: dns; ${input.reportingMta}`,
    `X-Sealpost-Envelope-Id: ${envelope.id}`,
    `Arrival-Date: ${rfc5322Date(envelope.created_at)}`,
  ];
  const perRecipient = report.recipients.map((r) =>
    [
      `Final-Recipient: rfc822; ${r.recipient}`,
      'Action: failed',
      `Status: ${r.status}`,
      ...(r.remoteMta ? [`Remote-MTA: ${r.remoteMta}`] : []),
      ...(r.diagnostic ? [`Diagnostic-Code: ${r.diagnostic}`] : []),
    ].join('\r\n'),
  );
  root
    .createChild('message/delivery-status')
    .setContent(`${[perMessage.join('\r\n'), ...perRecipient].join('\r\n\r\n')}\r\n`);

  if (input.originalHeaders !== undefined) {
    // The headers as they are (RFC 6522 §3): nodemailer would encode a text part quoted-printable, with
    // soft breaks inside header lines, so the part is written raw, 7bit or 8bit as its bytes are.
    const eightBit = input.originalHeaders.some((byte) => byte >= 0x80);
    const ending = /\r?\n$/.test(input.originalHeaders.toString('latin1')) ? '' : '\r\n';
    root
      .createChild('text/rfc822-headers')
      .setRaw(
        Buffer.concat([
          Buffer.from(
            `Content-Type: text/rfc822-headers\r\nContent-Transfer-Encoding: ${eightBit ? '8bit' : '7bit'}\r\n\r\n`,
          ),
          input.originalHeaders,
          Buffer.from(ending),
        ]),
      );
  }
  return root.build();
}

const unfold = (headers: Buffer | undefined) =>
  (headers ?? Buffer.alloc(0)).toString('utf8').replace(/\r?\n[ \t]+/g, ' ');

function headerValue(headers: Buffer | undefined, name: string): string | undefined {
  return new RegExp(`^${name}:\\s*(.+?)\\s*$`, 'im').exec(unfold(headers))?.[1];
}

/** RFC 5322 date-time, as Arrival-Date wants it. */
function rfc5322Date(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000');
}
