import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { AddressObject, EmailAddress, ParsedMail } from 'mailparser';
import { normalizeEmail } from '../../kernel/email.ts';
import { AppError, badRequest } from '../../kernel/errors.ts';
import { languageOfTag, type Language } from '../../kernel/languages.ts';
import type { MobileSource, SignInMethod } from '../tables.ts';

export interface Recipient {
  email: string;
  method: SignInMethod;
  /** E.164 */
  mobile?: string;
  /** Where `mobile` came from; absent with a mobile: the sender's header. */
  mobileSource?: MobileSource;
  /** X-Sealpost-Language for this recipient. */
  language?: Language;
}

export interface MessageFacts {
  /** The From address, normalised. */
  sender: string;
  subject: string;
  recipients: Recipient[];
  /** Addresses in To/Cc that are not addresses (skipped), for the log. */
  skipped: string[];
  /** X-Sealpost-Mobile headers naming someone who is not a recipient (ignored), for the log. */
  strayMobiles: string[];
}

/** The header a sender gives a recipient's mobile number in (docs/specification.md#message-headers). */
export const MOBILE_HEADER = 'x-sealpost-mobile';
/** `X-Sealpost-Language: <email>=<language>`: the language of a recipient's notification and codes. */
export const LANGUAGE_HEADER = 'x-sealpost-language';

/**
 * Who may read the sealed message and how they sign in (docs/design.md#recipients):
 * To and Cc of the message plus the SMTP envelope's recipients (the exchange passes RCPT TO, which
 * is where Bcc recipients are), normalised and deduplicated case-insensitively (first spelling kept);
 * `X-Sealpost-Mobile: <email>=<E.164>` gives a recipient the `sms` method, everyone else gets `email`.
 */
export function messageFacts(parsed: ParsedMail, envelopeRecipients: string | undefined): MessageFacts {
  const from = flatten(parsed.from)[0];
  if (!from?.address) throw badRequest('The message has no From address');
  const sender = normalizeEmail(from.address);
  if (!sender)
    throw new AppError(
      'invalid_email',
      400,
      `The From address ${JSON.stringify(from.address)} is not a valid email address`,
    );

  const mobiles = mobilesByEmail(parsed);
  const languages = languagesByEmail(parsed);
  const recipients = new Map<string, Recipient>();
  const skipped: string[] = [];
  const add = (email: string) => {
    const key = email.toLowerCase();
    if (recipients.has(key)) return;
    const mobile = mobiles.get(key)?.mobile;
    const language = languages.get(key);
    recipients.set(key, {
      email,
      ...(mobile ? { method: 'sms', mobile, mobileSource: 'header' } : { method: 'email' }),
      ...(language ? { language } : {}),
    });
  };

  for (const address of [...flatten(parsed.to), ...flatten(parsed.cc)]) {
    const email = address.address ? normalizeEmail(address.address) : undefined;
    if (email) add(email);
    else skipped.push(address.address || address.name || '(empty)');
  }
  for (const raw of splitEnvelopeRecipients(envelopeRecipients)) {
    const email = normalizeEmail(raw);
    if (!email) {
      throw new AppError(
        'invalid_email',
        400,
        `X-Sealpost-Envelope-Recipients: ${JSON.stringify(raw)} is not a valid email address`,
      );
    }
    add(email);
  }
  if (recipients.size === 0)
    throw badRequest('The message has no recipients (no address in To, Cc or X-Sealpost-Envelope-Recipients)');

  const strayMobiles = [...mobiles.values()]
    .filter((entry) => !recipients.has(entry.email.toLowerCase()))
    .map((entry) => entry.email);
  return { sender, subject: parsed.subject ?? '', recipients: [...recipients.values()], skipped, strayMobiles };
}

function flatten(field: AddressObject | AddressObject[] | undefined): EmailAddress[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects.flatMap((object) => object.value.flatMap((address) => (address.group ? address.group : [address])));
}

/** `a@x.example, <b@y.example>`: the envelope list as the exchange sends it. */
function splitEnvelopeRecipients(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(',')
    .map((part) =>
      part
        .trim()
        .replace(/^<(.*)>$/, '$1')
        .trim(),
    )
    .filter((part) => part !== '');
}

/** Every value of a repeatable `<email>=<value>` header, unfolded. */
function headerValues(parsed: ParsedMail, name: string): string[] {
  const raw = parsed.headers.get(name);
  return (raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]).map((value) =>
    String(value)
      .replace(/\s*\r?\n\s*/g, ' ')
      .trim(),
  );
}

/**
 * Languages by lower-cased address. A language Sealpost does not write in (`es`) is left to the
 * default rather than refused: the message must still reach its reader. A value that is not
 * `<email>=<language tag>` is refused like a malformed mobile header.
 */
function languagesByEmail(parsed: ParsedMail): Map<string, Language> {
  const result = new Map<string, Language>();
  for (const text of headerValues(parsed, LANGUAGE_HEADER)) {
    const eq = text.lastIndexOf('=');
    const email =
      eq > 0
        ? normalizeEmail(
            text
              .slice(0, eq)
              .trim()
              .replace(/^<(.*)>$/, '$1'),
          )
        : undefined;
    const tag = text.slice(eq + 1).trim();
    if (!email || !/^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$/.test(tag)) {
      throw badRequest(
        `X-Sealpost-Language: ${JSON.stringify(text)} is not <email>=<language>, such as bob@example.org=de`,
      );
    }
    const language = languageOfTag(tag);
    if (language) result.set(email.toLowerCase(), language);
  }
  return result;
}

function mobilesByEmail(parsed: ParsedMail): Map<string, { email: string; mobile: string }> {
  const result = new Map<string, { email: string; mobile: string }>();
  for (const text of headerValues(parsed, MOBILE_HEADER)) {
    const eq = text.lastIndexOf('=');
    if (eq <= 0) {
      throw new AppError(
        'invalid_mobile',
        400,
        `X-Sealpost-Mobile: ${JSON.stringify(text)} is not <email>=<E.164 number>`,
      );
    }
    const email = normalizeEmail(
      text
        .slice(0, eq)
        .trim()
        .replace(/^<(.*)>$/, '$1'),
    );
    if (!email) {
      throw new AppError(
        'invalid_email',
        400,
        `X-Sealpost-Mobile: ${JSON.stringify(text.slice(0, eq).trim())} is not a valid email address`,
      );
    }
    const number = text.slice(eq + 1).trim();
    const phone = number.startsWith('+') ? parsePhoneNumberFromString(number) : undefined;
    if (!phone?.isValid()) {
      throw new AppError(
        'invalid_mobile',
        400,
        `X-Sealpost-Mobile: ${JSON.stringify(number)} for ${email} is not a ` +
          'valid phone number in international form (+<country code><number>)',
      );
    }
    const key = email.toLowerCase();
    const earlier = result.get(key);
    if (earlier && earlier.mobile !== phone.number) {
      throw new AppError(
        'invalid_mobile',
        400,
        `X-Sealpost-Mobile gives ${email} two numbers (${earlier.mobile} and ${phone.number})`,
      );
    }
    result.set(key, { email, mobile: phone.number });
  }
  return result;
}
