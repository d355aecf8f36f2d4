import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { AddressObject, EmailAddress, ParsedMail } from 'mailparser';
import { normalizeEmail } from '../../kernel/email.ts';
import { AppError, badRequest } from '../../kernel/errors.ts';
import type { SignInMethod } from '../tables.ts';

export interface Recipient {
  email: string;
  method: SignInMethod;
  /** E.164 */
  mobile?: string;
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

/** DESIGN.md "Recipients and sign-in": the header a sender gives a recipient's mobile number in. */
export const MOBILE_HEADER = 'x-sealpost-mobile';

/**
 * Who may read the sealed message and how they sign in (DESIGN.md "Recipients and sign-in"):
 * To and Cc of the message plus the SMTP envelope's recipients (the exchange passes RCPT TO, which
 * is where Bcc recipients are), normalised and deduplicated case-insensitively (first spelling kept);
 * `X-Sealpost-Mobile: <email>=<E.164>` gives a recipient the `sms` method, everyone else gets `email`.
 */
export function messageFacts(parsed: ParsedMail, envelopeRecipients: string | undefined): MessageFacts {
  const from = flatten(parsed.from)[0];
  if (!from?.address) throw badRequest('The message has no From address');
  const sender = normalizeEmail(from.address);
  if (!sender) throw new AppError('invalid_email', 400, `The From address ${JSON.stringify(from.address)} is not a valid email address`);

  const mobiles = mobilesByEmail(parsed);
  const recipients = new Map<string, Recipient>();
  const skipped: string[] = [];
  const add = (email: string) => {
    const key = email.toLowerCase();
    if (recipients.has(key)) return;
    const mobile = mobiles.get(key)?.mobile;
    recipients.set(key, mobile ? { email, method: 'sms', mobile } : { email, method: 'email' });
  };

  for (const address of [...flatten(parsed.to), ...flatten(parsed.cc)]) {
    const email = address.address ? normalizeEmail(address.address) : undefined;
    if (email) add(email);
    else skipped.push(address.address || address.name || '(empty)');
  }
  for (const raw of splitEnvelopeRecipients(envelopeRecipients)) {
    const email = normalizeEmail(raw);
    if (!email) {
      throw new AppError('invalid_email', 400, `X-Sealpost-Envelope-Recipients: ${JSON.stringify(raw)} is not a valid email address`);
    }
    add(email);
  }
  if (recipients.size === 0) throw badRequest('The message has no recipients (no address in To, Cc or X-Sealpost-Envelope-Recipients)');

  const strayMobiles = [...mobiles.values()].filter((entry) => !recipients.has(entry.email.toLowerCase())).map((entry) => entry.email);
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
    .map((part) => part.trim().replace(/^<(.*)>$/, '$1').trim())
    .filter((part) => part !== '');
}

function mobilesByEmail(parsed: ParsedMail): Map<string, { email: string; mobile: string }> {
  const raw = parsed.headers.get(MOBILE_HEADER);
  const values = raw === undefined ? [] : (Array.isArray(raw) ? raw : [raw]).map(String);
  const result = new Map<string, { email: string; mobile: string }>();
  for (const value of values) {
    const text = value.replace(/\s*\r?\n\s*/g, ' ').trim();
    const eq = text.lastIndexOf('=');
    if (eq <= 0) {
      throw new AppError('invalid_mobile', 400, `X-Sealpost-Mobile: ${JSON.stringify(text)} is not <email>=<E.164 number>`);
    }
    const email = normalizeEmail(text.slice(0, eq).trim().replace(/^<(.*)>$/, '$1'));
    if (!email) {
      throw new AppError('invalid_email', 400, `X-Sealpost-Mobile: ${JSON.stringify(text.slice(0, eq).trim())} is not a valid email address`);
    }
    const number = text.slice(eq + 1).trim();
    const phone = number.startsWith('+') ? parsePhoneNumberFromString(number) : undefined;
    if (!phone?.isValid()) {
      throw new AppError('invalid_mobile', 400, `X-Sealpost-Mobile: ${JSON.stringify(number)} for ${email} is not a valid phone number in international form (+<country code><number>)`);
    }
    const key = email.toLowerCase();
    const earlier = result.get(key);
    if (earlier && earlier.mobile !== phone.number) {
      throw new AppError('invalid_mobile', 400, `X-Sealpost-Mobile gives ${email} two numbers (${earlier.mobile} and ${phone.number})`);
    }
    result.set(key, { email, mobile: phone.number });
  }
  return result;
}
