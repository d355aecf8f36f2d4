import { isAscii } from 'node:buffer';
import { pipeline, type Readable } from 'node:stream';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import MailComposer from 'nodemailer/lib/mail-composer';
import { normalizeEmail } from '../../kernel/email.ts';
import { badRequest } from '../../kernel/errors.ts';
import type { InboundLimits, MessageBody } from '../../contracts/exchange.ts';
import { headerBlockOf } from '../outbound/header-block.ts';
import { decodeBase64 } from './base64.ts';
import { EXPIRES_HEADER, expiresRefusal, expiresValues } from './expires-header.ts';
import { messageTooLarge, MessageSizeLimit } from './size-limit.ts';

/** What POST /v1/messages hands to accept(): the envelope and the RFC 5322 message as a stream. */
export interface ComposedMessage {
  sender: string;
  recipients: string[];
  payload: Readable | Buffer;
  /** A raw message with 8-bit bytes: relayed with BODY=8BITMIME (composed ones are 7-bit). */
  body8bitmime: boolean;
  /** UTF-8 in an envelope address or in a raw message's header: relayed with SMTPUTF8. */
  smtputf8: boolean;
}

interface Mailbox {
  name: string;
  address: string;
}

/**
 * The header by which a sender gives a recipient's mobile number, on both channels
 * (docs/specification.md#message-headers).
 */
export const MOBILE_HEADER = 'X-Sealpost-Mobile';
/** The header by which a sender gives a recipient's language, on both channels. */
export const LANGUAGE_HEADER = 'X-Sealpost-Language';

interface HeaderLine {
  key: string;
  value: string;
}

/**
 * Turns a validated JSON message into the same kind of payload the SMTP server stores: a complete MIME
 * message built by nodemailer's MailComposer (Message-ID, Date, MIME-Version, multipart as needed, Bcc
 * left out of the headers), or the sender's own `raw` message. Throws 400 AppErrors that name the field.
 */
export function composeMessage(body: MessageBody, limits: InboundLimits): ComposedMessage {
  const from = mailbox(body.from, 'from');
  const to = body.to.map((value, i) => mailbox(value, `to[${i}]`));
  const cc = (body.cc ?? []).map((value, i) => mailbox(value, `cc[${i}]`));
  const bcc = (body.bcc ?? []).map((value, i) => mailbox(value, `bcc[${i}]`));

  const recipients = uniqueAddresses([...to, ...cc, ...bcc]);
  if (recipients.length > limits.maxRecipients) {
    throw badRequest(
      `to, cc and bcc name ${recipients.length} recipients; ` +
        `at most ${limits.maxRecipients} are allowed (SMTP_MAX_RECIPIENTS)`,
    );
  }
  const extraHeaders = recipientHeaders(body.recipients ?? [], recipients);
  if (body.expires !== undefined) extraHeaders.push({ key: EXPIRES_HEADER, value: body.expires.trim() });

  if (body.raw !== undefined) {
    const structured = (['subject', 'text', 'html', 'attachments', 'inReplyTo', 'references'] as const).find(
      (field) => body[field] !== undefined,
    );
    if (structured) {
      throw badRequest(`${structured} cannot be combined with raw: a raw message carries its own headers and body`);
    }
    const payload = rawPayload(body.raw, extraHeaders, limits);
    const head = headerBlockOf(payload, payload.length);
    // The raw message's own X-Sealpost-Expires counts with the one `expires` put in front: two are refused.
    const refusal = expiresRefusal(expiresValues(head.toString('utf8')), new Date());
    if (refusal) throw refusal;
    return {
      sender: from.address,
      recipients,
      payload,
      body8bitmime: hasEightBit(payload),
      smtputf8: utf8Addresses(from.address, recipients) || hasEightBit(head),
    };
  }

  if (body.subject === undefined) throw badRequest('subject is required (or give the whole message as raw)');
  if (body.text === undefined && body.html === undefined && !body.attachments?.length) {
    throw badRequest('text, html or attachments is required (or give the whole message as raw)');
  }
  const refusal = expiresRefusal(body.expires === undefined ? [] : [body.expires], new Date());
  if (refusal) throw refusal;
  const composer = new MailComposer({
    from,
    to,
    ...(cc.length ? { cc } : {}),
    ...(bcc.length ? { bcc } : {}),
    subject: body.subject,
    ...(body.text !== undefined ? { text: body.text } : {}),
    ...(body.html !== undefined ? { html: body.html } : {}),
    ...(body.inReplyTo !== undefined ? { inReplyTo: body.inReplyTo } : {}),
    ...(body.references !== undefined ? { references: body.references } : {}),
    attachments: (body.attachments ?? []).map((attachment, index) => ({
      filename: attachment.filename,
      content: decodeBase64(attachment.content, `attachments[${index}].content`),
      ...(attachment.contentType ? { contentType: attachment.contentType } : {}),
    })),
    headers: extraHeaders,
    newline: 'win',
    // Content comes from the request only: never a file path or a URL for nodemailer to fetch.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  const payload = new MessageSizeLimit(limits.maxMessageSize);
  // pipeline passes a composer failure on to the payload (so accept() sees it) and tears the composer
  // down when the store stops reading; both reach the caller through accept().
  pipeline(composer.compile().createReadStream(), payload, () => {});
  // MailComposer encodes every header and body part in 7-bit (RFC 2047 words, quoted-printable, base64).
  return {
    sender: from.address,
    recipients,
    payload,
    body8bitmime: false,
    smtputf8: utf8Addresses(from.address, recipients),
  };
}

const hasEightBit = (bytes: Buffer) => !isAscii(bytes);
const utf8Addresses = (...addresses: Array<string | string[]>) =>
  addresses.flat().some((address) => /[^\x00-\x7f]/.test(address));

/** `bob@example.com` or `Bob Example <bob@example.com>`, the address normalised. */
function mailbox(value: string, field: string): Mailbox {
  const match = /^\s*(?:(.*?)\s*<([^<>]*)>|([^<>]*))\s*$/.exec(value);
  const rawAddress = match ? (match[2] ?? match[3] ?? '') : '';
  const address = normalizeEmail(rawAddress);
  if (!address) throw badRequest(`${field} ${JSON.stringify(value)} is not a valid email address`, 'invalid_email');
  const name = (match?.[1] ?? '').replace(/^"(.*)"$/, '$1').trim();
  return { name, address };
}

function uniqueAddresses(mailboxes: Mailbox[]): string[] {
  const seen = new Map<string, string>();
  for (const { address } of mailboxes) if (!seen.has(address.toLowerCase())) seen.set(address.toLowerCase(), address);
  return [...seen.values()];
}

/**
 * `X-Sealpost-Mobile: <email>=<E.164>` and `X-Sealpost-Language: <email>=<language>` for each entry
 * of `recipients`; the email must be one of the recipients.
 */
function recipientHeaders(entries: NonNullable<MessageBody['recipients']>, recipients: string[]): HeaderLine[] {
  const known = new Map(recipients.map((address) => [address.toLowerCase(), address]));
  const given = new Set<string>();
  return entries.flatMap((entry, i) => {
    const email = normalizeEmail(entry.email);
    if (!email)
      throw badRequest(
        `recipients[${i}].email ${JSON.stringify(entry.email)} is not a valid email address`,
        'invalid_email',
      );
    const recipient = known.get(email.toLowerCase());
    if (!recipient) throw badRequest(`recipients[${i}].email ${email} is not among to, cc and bcc`, 'invalid_email');
    if (given.has(recipient.toLowerCase()))
      throw badRequest(`recipients[${i}].email ${email} is given more than once`, 'invalid_email');
    given.add(recipient.toLowerCase());
    if (entry.mobile === undefined && entry.language === undefined)
      throw badRequest(`recipients[${i}] gives neither mobile nor language`);
    const lines: HeaderLine[] = [];
    if (entry.mobile !== undefined) {
      const phone = entry.mobile.trim().startsWith('+') ? parsePhoneNumberFromString(entry.mobile) : undefined;
      if (!phone?.isValid()) {
        throw badRequest(
          `recipients[${i}].mobile ${JSON.stringify(entry.mobile)} is not a ` +
            'valid mobile number in international format (such as +41 79 123 45 67)',
          'invalid_mobile',
        );
      }
      lines.push({ key: MOBILE_HEADER, value: `${recipient}=${phone.number}` });
    }
    if (entry.language !== undefined) lines.push({ key: LANGUAGE_HEADER, value: `${recipient}=${entry.language}` });
    return lines;
  });
}

/**
 * The sender's own message, unchanged but for the X-Sealpost-* headers of `recipients` and `expires` put in front (the
 * intake then makes every line end CRLF). It was decoded from the request already, so it is a Buffer,
 * not a stream.
 */
function rawPayload(base64: string, extraHeaders: HeaderLine[], limits: InboundLimits): Buffer {
  const raw = decodeBase64(base64, 'raw');
  // A message starts with a header field: a name of printable characters, then a colon.
  if (!/^[\x21-\x39\x3b-\x7e]+:/.test(raw.subarray(0, 1000).toString('latin1'))) {
    throw badRequest('raw is not an RFC 5322 message: it must start with a header field such as "From: ..."');
  }
  if (raw.length > limits.maxMessageSize) throw messageTooLarge(limits.maxMessageSize);
  if (extraHeaders.length === 0) return raw;
  const headers = extraHeaders.map(({ key, value }) => `${key}: ${value}\r\n`).join('');
  return Buffer.concat([Buffer.from(headers, 'utf8'), raw]);
}
