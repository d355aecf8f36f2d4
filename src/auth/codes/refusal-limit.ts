import type { Kysely } from 'kysely';
import { AppError, type ErrorCode } from '../../kernel/errors.ts';
import type { AuthTables } from '../tables.ts';
import { HOUR_MS, hourlyWait, lockKeys, rateLimited } from './hourly-window.ts';

/**
 * Refused code requests a client IP may make per hour, as a multiple of SMS_LIMIT_IP_HOURLY (default
 * 20 → 40). A reader who mistypes their address or number a few times stays far below it; someone
 * cycling numbers to learn which one is on record reaches it, and from then on gets sms_rate_limit for
 * the right number too, so the answers stop telling them anything.
 */
export const REFUSALS_PER_CLIENT_FACTOR = 2;

/**
 * Refused code requests for one message per hour, from all clients together, as a multiple of
 * SMS_LIMIT_IP_HOURLY (default 20 → 100): the bound for a prober with many addresses. Higher than the
 * per-client bound so that one client alone cannot shut a message's recipients out; once reached,
 * every code request for the message is refused until the hour has passed (answering the right number
 * would again tell the prober which number is right).
 */
export const REFUSALS_PER_MESSAGE_FACTOR = 5;

/** The code request errors that tell the asker something about the recipients of a message. */
const PROBE_REFUSALS = new Set<ErrorCode | undefined>(['unauthorized_user', 'forbidden_auth_method', 'email_and_mobile_mismatch']);

export function isProbeRefusal(error: unknown): boolean {
  return error instanceof AppError && PROBE_REFUSALS.has(error.errorCode);
}

/** A code request under the refusal limits: it counts as refused unless `notRefused()` is called. */
export interface CheckedRequest {
  notRefused(): Promise<void>;
}

/**
 * The limits on refused code requests (without them, anyone with a reader link could try numbers and
 * addresses for free: docs/design.md#rate-limits), counted in PostgreSQL so that they hold across instances.
 * A request is counted before the recipient is looked up — checked and recorded in one transaction under
 * advisory locks on its client and its message, so parallel requests cannot overshoot — and uncounted when
 * the lookup did not refuse it.
 */
export class RefusalLimiter {
  constructor(
    private readonly db: Kysely<AuthTables>,
    private readonly limits: { perClientHourly: number; perMessageHourly: number },
  ) {}

  async check(messageId: string, client: string, now: Date): Promise<CheckedRequest> {
    const id = await this.db.transaction().execute(async (trx) => {
      await lockKeys(trx, 'sealpost.auth.code_refusals', [`client:${client}`, `message:${messageId}`]);
      const hourAgo = new Date(now.getTime() - HOUR_MS);
      const wait = Math.max(
        hourlyWait(await limitTh(trx, 'client', client, hourAgo, this.limits.perClientHourly), now),
        hourlyWait(await limitTh(trx, 'message_id', messageId, hourAgo, this.limits.perMessageHourly), now),
      );
      if (wait > 0) throw rateLimited(wait);
      const row = await trx
        .insertInto('code_refusals')
        .values({ message_id: messageId, client, refused_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    });
    return {
      notRefused: async () => {
        await this.db.deleteFrom('code_refusals').where('id', '=', id).execute();
      },
    };
  }

  /** Records older than an hour no longer count for anything. */
  async deleteOld(now: Date): Promise<number> {
    const result = await this.db
      .deleteFrom('code_refusals')
      .where('refused_at', '<=', new Date(now.getTime() - HOUR_MS))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** The `limit`-th newest refusal since `since` for this client or message (none: the limit is not reached). */
async function limitTh(trx: Kysely<AuthTables>, column: 'client' | 'message_id', value: string, since: Date, limit: number): Promise<Date | undefined> {
  const row = await trx
    .selectFrom('code_refusals')
    .select('refused_at')
    .where(column, '=', value)
    .where('refused_at', '>', since)
    .orderBy('refused_at', 'desc')
    .offset(limit - 1)
    .limit(1)
    .executeTakeFirst();
  return row?.refused_at;
}
