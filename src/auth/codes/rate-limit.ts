import type { Kysely } from 'kysely';
import type { AuthTables } from '../tables.ts';
import { HOUR_MS, hourlyWait, lockKeys, rateLimited } from './hourly-window.ts';
import { REFUSALS_PER_CLIENT_FACTOR, REFUSALS_PER_MESSAGE_FACTOR, RefusalLimiter } from './refusal-limit.ts';

export interface SendLimits {
  /** Shortest gap between two codes to one destination; 0 turns it off. */
  destinationIntervalMs: number;
  destinationHourly: number;
  clientHourly: number;
}

/** A send counted against the limits; give it back when the code could not be sent. */
export interface Reservation {
  release(): Promise<void>;
}

/**
 * The SMS rate limits (docs/design.md#rate-limits), counted in PostgreSQL so that they hold
 * across instances: per destination (mobile number, or address for email codes) and per client IP.
 * A send is first reserved — checked and recorded in one transaction under advisory locks on its two
 * keys, so two instances cannot both take the last slot — and released again if the provider fails
 * (a provider outage must not lock users out). Refused requests have limits of their own, derived from
 * the per-IP limit (`refusals`).
 */
export class CodeSendLimiter {
  readonly refusals: RefusalLimiter;

  constructor(
    private readonly db: Kysely<AuthTables>,
    private readonly limits: SendLimits,
  ) {
    this.refusals = new RefusalLimiter(db, {
      perClientHourly: limits.clientHourly * REFUSALS_PER_CLIENT_FACTOR,
      perMessageHourly: limits.clientHourly * REFUSALS_PER_MESSAGE_FACTOR,
    });
  }

  async reserve(destination: string, client: string, now: Date): Promise<Reservation> {
    const id = await this.db.transaction().execute(async (trx) => {
      await lockKeys(trx, 'sealpost.auth.code_sends', [`destination:${destination}`, `client:${client}`]);
      const hourAgo = new Date(now.getTime() - HOUR_MS);
      const toDestination = await recentSends(trx, 'destination', destination, hourAgo, this.limits.destinationHourly);
      const fromClient = await recentSends(trx, 'client', client, hourAgo, this.limits.clientHourly);
      const waits: number[] = [];
      if (toDestination.latest && this.limits.destinationIntervalMs > 0) {
        waits.push(toDestination.latest.getTime() + this.limits.destinationIntervalMs - now.getTime());
      }
      waits.push(hourlyWait(toDestination.limitTh, now));
      waits.push(hourlyWait(fromClient.limitTh, now));
      const wait = Math.max(...waits);
      if (wait > 0) throw rateLimited(wait);
      const row = await trx
        .insertInto('code_sends')
        .values({ destination, client, sent_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    });
    return {
      release: async () => {
        await this.db.deleteFrom('code_sends').where('id', '=', id).execute();
      },
    };
  }

  /** Records older than an hour no longer count for anything (sends and refusals). */
  async deleteOld(now: Date): Promise<number> {
    const result = await this.db
      .deleteFrom('code_sends')
      .where('sent_at', '<=', new Date(now.getTime() - HOUR_MS))
      .executeTakeFirst();
    return Number(result.numDeletedRows) + (await this.refusals.deleteOld(now));
  }
}

/**
 * The newest send to (or from) `value` since `since`, and the `limit`-th newest: only these two decide
 * the limits, so only these two are read (the index on (column, sent_at) walks at most `limit` entries),
 * however many sends a high limit lets through in an hour.
 */
async function recentSends(
  trx: Kysely<AuthTables>,
  column: 'destination' | 'client',
  value: string,
  since: Date,
  limit: number,
): Promise<{ latest: Date | undefined; limitTh: Date | undefined }> {
  const newest = () =>
    trx.selectFrom('code_sends').select('sent_at').where(column, '=', value).where('sent_at', '>', since).orderBy('sent_at', 'desc');
  const row = await trx
    .selectNoFrom([newest().limit(1).as('latest'), newest().offset(limit - 1).limit(1).as('limit_th')])
    .executeTakeFirstOrThrow();
  return { latest: row.latest ?? undefined, limitTh: row.limit_th ?? undefined };
}
