import type { SMTPServerSession } from 'smtp-server';

export interface ReceivedFields {
  /** Our name (SMTP_HOSTNAME). */
  hostname: string;
  envelopeId: string;
  session: Pick<
    SMTPServerSession,
    'hostNameAppearsAs' | 'clientHostname' | 'remoteAddress' | 'transmissionType' | 'tlsOptions' | 'envelope'
  >;
  recipients: string[];
  date?: Date;
}

/**
 * The trace header an SMTP server must put in front of every message it accepts (RFC 5321 §4.4):
 *
 *   Received: from <helo> (<rDNS> [<ip>])
 *   	by <hostname> (Sealpost) with ESMTPS id <envelopeId>
 *   	(using TLSv1.3 with cipher ...)
 *   	for <rcpt>; Sat, 21 Nov 2026 12:00:00 +0000
 *
 * It is the only change made to the bytes a sender hands us. `for` names the recipient only when there
 * is exactly one, as Postfix does, so a message copied to several people does not reveal its Bcc list.
 * Client-supplied parts are reduced to printable ASCII without parentheses: they cannot break the header.
 */
export function receivedHeader(fields: ReceivedFields): Buffer {
  const { session } = fields;
  const ip = session.remoteAddress.includes(':') ? `IPv6:${session.remoteAddress}` : session.remoteAddress;
  const literal = `[${ip}]`;
  // smtp-server gives the [ip] literal itself as clientHostname when there is no reverse name.
  const rdns =
    session.clientHostname && !session.clientHostname.startsWith('[') ? `${safe(session.clientHostname)} ` : '';
  const helo = session.hostNameAppearsAs ? safe(session.hostNameAppearsAs) : literal;
  const lines = [
    `Received: from ${helo} (${rdns}${literal})`,
    `\tby ${safe(fields.hostname)} (Sealpost) with ${protocol(session)} id ${fields.envelopeId}`,
  ];
  if (session.tlsOptions)
    lines.push(`\t(using ${safe(session.tlsOptions.version)} with cipher ${safe(session.tlsOptions.name)})`);
  const only = fields.recipients.length === 1 ? fields.recipients[0] : undefined;
  const date = rfc5322Date(fields.date ?? new Date());
  if (only && /^[\x21-\x7e]+$/.test(only) && !/[<>]/.test(only)) lines.push(`\tfor <${only}>; ${date}`);
  else lines[lines.length - 1] += `; ${date}`;
  return Buffer.from(`${lines.join('\r\n')}\r\n`, 'utf8');
}

/** ESMTP, ESMTPS, ... as smtp-server names it; UTF8SMTP(S) when the sender used SMTPUTF8 (RFC 6531 §4.3). */
function protocol(session: ReceivedFields['session']): string {
  const type = session.transmissionType || 'SMTP';
  return session.envelope.smtpUtf8 && type.startsWith('ESMTP') ? `UTF8SMTP${type.slice('ESMTP'.length)}` : type;
}

/** RFC 5322 date-time with a numeric zone (toUTCString's "GMT" is the obsolete form). */
function rfc5322Date(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000');
}

function safe(value: string): string {
  return value.replace(/[^\x21-\x27\x2a-\x7e]/g, '?');
}
