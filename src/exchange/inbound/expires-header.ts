import { type AppError, badRequest } from '../../kernel/errors.ts';
import { parseSealExpiry, SealExpiryError } from '../../kernel/seal-expiry.ts';

/**
 * The header by which a sender asks for a sealed message's end date, on both channels
 * (docs/specification.md#end-dates). The seal service reads it and removes it before sealing.
 */
export const EXPIRES_HEADER = 'X-Sealpost-Expires';

/** The values of every X-Sealpost-Expires field of a header section, unfolded; the name in any case. */
export function expiresValues(header: string): string[] {
  if (!/x-sealpost-expires/i.test(header)) return [];
  const unfolded = header.replace(/\r?\n(?=[ \t])/g, '');
  return [...unfolded.matchAll(/^X-Sealpost-Expires[ \t]*:(.*)$/gim)].map((match) => match[1]!.trim());
}

/**
 * A message's X-Sealpost-Expires, checked where the sender still hears the answer: none, or one value that
 * parseSealExpiry takes and that does not lie in the past at `now`. Anything else is a 400 validation_failed
 * AppError naming the value (SMTP turns it into 554 5.6.0): found only at sealing, the mistake would end in
 * a bounce, and a header the seal service could not read must never leave a message without the end its
 * sender asked for. Two headers are refused too, as neither can be said to be the one meant.
 */
export function expiresRefusal(values: string[], now: Date): AppError | undefined {
  if (values.length > 1) {
    return badRequest(
      `${EXPIRES_HEADER} is given ${values.length} times (${values.map((v) => JSON.stringify(v)).join(', ')}); ` +
        'give it once',
    );
  }
  if (values.length === 0) return undefined;
  try {
    parseSealExpiry(values[0]!, now);
    return undefined;
  } catch (error) {
    if (error instanceof SealExpiryError) return badRequest(error.message);
    throw error;
  }
}
