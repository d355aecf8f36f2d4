import addressparser from 'nodemailer/lib/addressparser';
import { Compile } from 'typebox/compile';
import { RecipientNumbersSchema } from '../../contracts/seal.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { AppError } from '../../kernel/errors.ts';
import { normalizeMobile } from '../../kernel/mobile.ts';
import type { IncomingMessage } from '../handoff.ts';
import { decide, type HeaderFields, type MatchableRule } from '../rules/criteria.ts';

const TIMEOUT_MS = 10_000;
/** Recipients named in the refusal's message. */
const NAMED = 5;
const CHECK_NUMBERS = Compile(RecipientNumbersSchema);

/** Which of these recipients have a number on record at the seal service: one request per message. */
export interface NumbersOnRecord {
  withNumber(recipients: string[]): Promise<Set<string>>;
}

/**
 * POST {SEAL_URL}/v1/recipients/numbers with the service token: the seal service decides at sealing which number
 * applies (docs/design.md#contacts), so the intake asks it rather than keeping a copy. Unreachable or a surprise: a
 * 503, which the SMTP door answers 451 (the sending server tries again) and the JSON door 503.
 */
export class SealNumbers implements NumbersOnRecord {
  constructor(private readonly options: { baseUrl: string; serviceToken: string; timeoutMs?: number }) {}

  async withNumber(recipients: string[]): Promise<Set<string>> {
    let answer: unknown;
    try {
      const response = await fetch(`${this.options.baseUrl}/v1/recipients/numbers`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.options.serviceToken}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ recipients }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? TIMEOUT_MS),
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new Error(`the seal service answered ${response.status}`);
      }
      answer = await response.json();
    } catch (error) {
      throw numbersUnknown(error);
    }
    if (!CHECK_NUMBERS.Check(answer)) throw numbersUnknown(new Error('the seal service answered something unexpected'));
    return new Set(
      answer.recipients.filter((entry) => entry.mobileSource !== undefined).map((entry) => entry.email.toLowerCase()),
    );
  }
}

function numbersUnknown(cause: unknown): AppError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new AppError(
    'unavailable',
    503,
    `SIGN_IN_REQUIRE_SMS: the seal service could not say which recipients have a mobile number (${reason}); ` +
      'try again later',
    { cause },
  );
}

/**
 * SIGN_IN_REQUIRE_SMS (docs/design.md#contacts): the recipients of a message that would be sealed with no number
 * from any source, so that nothing is sealed that an email code alone would open. The seal service seals for To and
 * Cc and the envelope's recipients; so when any recipient's rule seals, every To and Cc address counts, with the
 * envelope recipients whose rule seals. A recipient the sender gave a number (X-Sealpost-Mobile, or JSON
 * `recipients[].mobile`, which the JSON door writes as that header) needs nothing more; the others are asked of the
 * seal service in one request. Empty: nothing is missing (or nothing is sealed).
 */
export async function recipientsWithoutNumber(
  message: Pick<IncomingMessage, 'channel' | 'sender' | 'recipients'>,
  headers: HeaderFields,
  rules: readonly MatchableRule[],
  numbers: NumbersOnRecord,
): Promise<string[]> {
  const sealing = decide(rules, { ...message, headers })
    .filter((decision) => decision.rule?.outbound.includes('seal'))
    .map((decision) => decision.recipient);
  if (sealing.length === 0) return [];
  const given = new Set<string>();
  for (const value of headers.fields.get('x-sealpost-mobile') ?? []) {
    const eq = value.lastIndexOf('=');
    const email =
      eq > 0
        ? normalizeEmail(
            value
              .slice(0, eq)
              .trim()
              .replace(/^<(.*)>$/, '$1'),
          )
        : undefined;
    if (email && normalizeMobile(value.slice(eq + 1))) given.add(email.toLowerCase());
  }
  const headerAddresses = [...(headers.fields.get('to') ?? []), ...(headers.fields.get('cc') ?? [])].flatMap((value) =>
    addressparser(value, { flatten: true }).map((entry) => entry.address ?? ''),
  );
  const open = new Map<string, string>();
  for (const address of [...headerAddresses, ...sealing]) {
    const email = normalizeEmail(address);
    if (!email) continue;
    const key = email.toLowerCase();
    if (!given.has(key) && !open.has(key)) open.set(key, email);
  }
  if (open.size === 0) return [];
  const found = await numbers.withNumber([...open.values()]);
  return [...open.entries()].filter(([key]) => !found.has(key)).map(([, email]) => email);
}

/** The refusal: SMTP 550 5.7.1 (smtp-replies.ts), JSON 400 `mobile_required`; both name the recipients. */
export function mobileRequired(recipients: string[]): AppError {
  // An SMTP reply line stays short (RFC 5321 §4.5.3.1.5): the first few are named, the error object has them all.
  const named =
    recipients.length > NAMED
      ? `${recipients.slice(0, NAMED).join(', ')} and ${recipients.length - NAMED} more`
      : recipients.join(', ');
  return new AppError(
    'mobile_required',
    400,
    `No mobile number for ${named}: this organisation seals only for recipients who sign in by SMS ` +
      '(SIGN_IN_REQUIRE_SMS); give their numbers (X-Sealpost-Mobile) or add them to the contacts directory',
    { details: { recipients } },
  );
}
