import { encode as base64Encode, wrap as base64Wrap } from 'nodemailer/lib/base64';
import MimeNode from 'nodemailer/lib/mime-node';
import { headerBlockOf } from '../outbound/header-block.ts';
import type { BounceReport, Envelope } from '../tables.ts';

export interface BounceInput {
  /** SMTP_HOSTNAME: the Reporting-MTA. */
  reportingMta: string;
  /** NOTIFY_FROM: the From header of the report (its envelope sender is always `<>`). */
  from: string;
  /** The failed message: its envelope sender gets the bounce. */
  envelope: Pick<Envelope, 'id' | 'sender' | 'created_at'>;
  report: BounceReport;
  /** The failed message's header block, returned as the headers part; absent if unreadable. */
  originalHeaders: Buffer | undefined;
  /**
   * A notice to the postmaster (BOUNCE_NOTICE_RECIPIENT, the address given here) about one of our bounces
   * that could not be delivered: `envelope` is then that bounce, and `originalHeaders` its headers.
   */
  noticeTo?: string;
}

/**
 * The header a notice to the postmaster carries, so that a notice that cannot be delivered either is known
 * for one and dropped (logged) instead of noticed again: Postfix keeps its double-bounce notices apart the
 * same way (by their sender), but ours have the null sender like every report.
 */
export const NOTICE_HEADER = 'X-Sealpost-Notice';

/**
 * Why a failed message must not be bounced, or undefined when it may. Never to the null sender `<>`
 * (RFC 5321 §4.5.5: that is how bounces and other notifications say "do not answer me"), and never
 * for a message that is itself a bounce — ours (is_bounce) or anybody's (a delivery status report,
 * RFC 3464 or RFC 6533) — so that two systems can never bounce a message back and forth.
 */
export function bounceRefusal(
  envelope: Pick<Envelope, 'sender' | 'is_bounce'>,
  originalHeaders: Buffer | undefined,
): string | undefined {
  if (envelope.sender === '') return 'the sender is the null sender <>';
  if (envelope.is_bounce) return 'the message is itself a bounce';
  const headers = unfold(originalHeaders);
  if (
    /^content-type:\s*multipart\/report\s*;[^\n]*report-type\s*=\s*"?(global-)?delivery-status/im.test(headers) ||
    /^content-type:\s*message\/(global-)?delivery-status\b/im.test(headers)
  ) {
    return 'the message is itself a delivery status notification';
  }
  return undefined;
}

/** Whether a header block is that of a notice to the postmaster (NOTICE_HEADER). */
export const isNotice = (headers: Buffer | undefined) => new RegExp(`^${NOTICE_HEADER}:`, 'im').test(unfold(headers));

/**
 * A delivery status notification (RFC 3464, RFC 6533 where UTF-8 is needed): `multipart/report` with a
 * human-readable part, the machine-readable status part (per-message fields, then one block per failed
 * recipient) and the original headers (RFC 6522). The body of the original is not returned: the sender
 * has it, and it may be large or confidential.
 *
 * - A failed address or a diagnostic with non-ASCII text makes the report
 *   `report-type=global-delivery-status` with a `message/global-delivery-status` part, UTF-8 as it is
 *   (RFC 6533 §6.2), and a non-ASCII address is given as `utf-8; jörg@…` (RFC 6533 §3); otherwise the
 *   status part is the 7-bit `message/delivery-status` of RFC 3464.
 * - Original headers with 8-bit bytes go as `message/global-headers` (RFC 6533 §6.3), otherwise as
 *   `text/rfc822-headers`, both byte for byte (`8bit` or `7bit`). A header line longer than SMTP's 998
 *   octets would have to be broken on the way: such headers go base64, which decodes to the lines whole.
 * Both message/global-* types may take a transfer encoding on a 7-bit path (RFC 6533 §6.2, §6.3), which
 * seven-bit.ts gives them (base64) for a relay without 8BITMIME; quoted-printable, which would break the
 * header lines with soft breaks, is never used for either part.
 */
export async function composeBounce(input: BounceInput): Promise<Buffer> {
  const { envelope, report } = input;
  const global = report.recipients.some((r) =>
    [r.recipient, r.status, r.diagnostic ?? '', r.remoteMta ?? ''].some(nonAscii),
  );
  const root = new MimeNode(`multipart/report; report-type=${global ? 'global-' : ''}delivery-status`);
  root.setHeader({
    From: input.from,
    To: input.noticeTo ?? envelope.sender,
    Subject: input.noticeTo ? 'Undeliverable Bounce Returned to Postmaster' : 'Undelivered Mail Returned to Sender',
    // RFC 3834: an automatic answer, which auto-responders must not answer in turn.
    'Auto-Submitted': 'auto-replied',
  });
  if (input.noticeTo) root.setHeader(NOTICE_HEADER, 'undeliverable-bounce');
  const originalMessageId = headerValue(input.originalHeaders, 'message-id');
  if (originalMessageId) root.setHeader({ 'In-Reply-To': originalMessageId, References: originalMessageId });

  const lines = report.recipients.map(
    (r) => `  <${r.recipient}>: ${r.diagnostic ? r.diagnostic.replace(/^[^;]*;\s*/, '') : r.status}`,
  );
  const intro = input.noticeTo
    ? [
        `A delivery report from this system to <${envelope.sender}> could not be delivered.`,
        'It comes to the postmaster instead, and is not returned again if this notice fails too.',
      ]
    : ['Your message could not be delivered to the recipients below.'];
  root
    .createChild('text/plain; charset=utf-8')
    .setContent(
      [
        `This is the mail system at ${input.reportingMta}.`,
        '',
        ...intro,
        report.reason,
        '',
        ...lines,
        '',
        `The delivery report and the headers of ${input.noticeTo ? 'the undelivered report' : 'your message'} ` +
          'are attached.',
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
      // RFC 6533 §3: the utf-8 address type carries a non-ASCII address (only in a global report).
      `Final-Recipient: ${nonAscii(r.recipient) ? 'utf-8' : 'rfc822'}; ${r.recipient}`,
      'Action: failed',
      `Status: ${r.status}`,
      ...(r.remoteMta ? [`Remote-MTA: ${r.remoteMta}`] : []),
      ...(r.diagnostic ? [`Diagnostic-Code: ${r.diagnostic}`] : []),
    ].join('\r\n'),
  );
  const status = Buffer.from(`${[perMessage.join('\r\n'), ...perRecipient].join('\r\n\r\n')}\r\n`);
  addRawPart(root, `message/${global ? 'global-' : ''}delivery-status`, status);

  if (input.originalHeaders !== undefined) {
    const eightBit = input.originalHeaders.some((byte) => byte >= 0x80);
    const ending = /\r?\n$/.test(input.originalHeaders.toString('latin1')) ? '' : '\r\n';
    const headers = Buffer.concat([input.originalHeaders, Buffer.from(ending)]);
    addRawPart(root, eightBit ? 'message/global-headers' : 'text/rfc822-headers', headers, { longLines: true });
  }
  return root.build();
}

/**
 * A report part written raw: nodemailer would encode a text part quoted-printable, with soft breaks inside
 * header lines, and gives no transfer encoding to a message/* part whatever its bytes. `7bit` or `8bit` as
 * the bytes are; base64 (`longLines`) where a line is longer than 998 octets (RFC 5322 §2.1.1).
 */
function addRawPart(root: MimeNode, type: string, body: Buffer, options: { longLines?: boolean } = {}): void {
  const lines = body.toString('latin1').split(/\r?\n/);
  const long = options.longLines === true && lines.some((line) => line.length > 998);
  const encoding = long ? 'base64' : body.some((byte) => byte >= 0x80) ? '8bit' : '7bit';
  const content = long ? Buffer.from(`${base64Wrap(base64Encode(body), 76)}\r\n`) : body;
  const head = Buffer.from(`Content-Type: ${type}\r\nContent-Transfer-Encoding: ${encoding}\r\n\r\n`);
  root.createChild(type).setRaw(Buffer.concat([head, content]));
}

/**
 * The MAIL FROM parameters a composed report needs: SMTPUTF8 (RFC 6531) only when its recipient or its own
 * header block is non-ASCII (a UTF-8 sender), BODY=8BITMIME (RFC 6152) when its body has 8-bit bytes (a
 * global report part, 8-bit original headers): those seven-bit.ts can re-encode for a relay without
 * 8BITMIME, so a report that needs no SMTPUTF8 reaches any relay.
 */
export function reportParameters(raw: Buffer, recipient: string): { smtputf8: boolean; body8bitmime: boolean } {
  const head = headerBlockOf(raw);
  return {
    smtputf8: nonAscii(recipient) || head.some((byte) => byte >= 0x80),
    body8bitmime: raw.subarray(head.length).some((byte) => byte >= 0x80),
  };
}

const nonAscii = (text: string) => /[^\x00-\x7f]/.test(text);

const unfold = (headers: Buffer | undefined) =>
  (headers ?? Buffer.alloc(0)).toString('utf8').replace(/\r?\n[ \t]+/g, ' ');

function headerValue(headers: Buffer | undefined, name: string): string | undefined {
  return new RegExp(`^${name}:\\s*(.+?)\\s*$`, 'im').exec(unfold(headers))?.[1];
}

/** RFC 5322 date-time, as Arrival-Date wants it. */
function rfc5322Date(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000');
}
