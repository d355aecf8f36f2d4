import type { ParsedMail } from 'mailparser';
import { badRequest } from '../../kernel/errors.ts';
import { parseSealExpiry, type SealExpiry, SealExpiryError } from '../../kernel/seal-expiry.ts';

/** The header a sender asks for a message's end date with (docs/specification.md#end-dates). */
export const EXPIRES_HEADER = 'x-sealpost-expires';

/**
 * The sender's `X-Sealpost-Expires`, or undefined when there is none. The exchange refuses a malformed value at
 * intake; this is the defence behind it (400 validation_failed), with the same parser. Like X-Sealpost-Mobile,
 * the header stays in the sealed bytes (they are sealed as received) and the reader never shows it.
 */
export function expiryOf(parsed: ParsedMail, now: Date): SealExpiry | undefined {
  const raw = parsed.headers.get(EXPIRES_HEADER);
  if (raw === undefined) return undefined;
  const values = [...new Set((Array.isArray(raw) ? raw : [raw]).map((value) => unfold(String(value))))];
  if (values.length > 1) {
    throw badRequest(`X-Sealpost-Expires is given ${values.length} times with different values: give one`);
  }
  try {
    return parseSealExpiry(values[0]!, now);
  } catch (error) {
    if (error instanceof SealExpiryError) throw badRequest(error.message);
    throw error;
  }
}

function unfold(value: string): string {
  return value.replace(/\s*\r?\n\s*/g, ' ').trim();
}
