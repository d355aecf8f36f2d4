import { sql, type Kysely } from 'kysely';
import { AppError } from '../../kernel/errors.ts';

/** The window every code-request limit counts in. */
export const HOUR_MS = 3_600_000;

/** How long until fewer than the limit of records lie within the last hour (≤ 0: now), from the
 * limit-th newest record of the hour (none: the limit is not reached). */
export function hourlyWait(limitTh: Date | undefined, now: Date): number {
  if (!limitTh) return 0;
  return limitTh.getTime() + HOUR_MS - now.getTime();
}

/**
 * The one answer of every code-request limit (docs/design.md#rate-limits): 429 sms_rate_limit with
 * Retry-After in seconds.
 */
export function rateLimited(waitMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError('sms_rate_limit', 429, `Too many codes requested; try again in ${seconds} s`, {
    headers: { 'retry-after': String(seconds) },
  });
}

/**
 * Takes a transaction-scoped advisory lock on each key of `namespace`, so that the check and the
 * record of one request are atomic against other instances. Sorted, so that two requests needing the
 * same locks take them in the same order (no deadlock).
 */
// biome-ignore lint/suspicious/noExplicitAny: takes a transaction of any schema's tables; it only runs SQL of its own
export async function lockKeys(trx: Kysely<any>, namespace: string, keys: string[]): Promise<void> {
  for (const key of [...keys].sort()) {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`${namespace}.${key}`}, 0))`.execute(trx);
  }
}
