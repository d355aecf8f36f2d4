import { sql, type Kysely } from 'kysely';
import { AppError } from '../../kernel/errors.ts';
import type { AuthTables } from '../tables.ts';

/** The window every code-request limit counts in. */
export const HOUR_MS = 3_600_000;

/** How a use of HourlyLimit counts: its table, the columns it counts by, and their limits. */
export interface HourlyLimitSettings<Column extends string> {
  table: 'code_sends' | 'code_refusals';
  /** The column holding when each record was made. */
  at: 'sent_at' | 'refused_at';
  /** Records allowed per value of each column within the last hour, and the name its advisory lock takes. */
  counted: Array<{ column: Column; perHour: number; lockName: string }>;
  /** Shortest gap between two records for one value of a column; 0 turns it off. */
  interval?: { column: Column; ms: number };
}

/** A request counted against the limit; `release()` takes it out of the count again. */
export interface Counted {
  release(): Promise<void>;
}

/**
 * Requests counted per hour in PostgreSQL, so that a limit holds across instances
 * (docs/design.md#rate-limits). A request is checked and recorded in one transaction under an advisory
 * lock per counted value, so two instances cannot both take the last slot; the caller releases it again
 * when it should not count (a send the provider failed, a request that was not refused). One class for
 * every code-request limit, each configured by its settings.
 */
export class HourlyLimit<Column extends string> {
  constructor(
    private readonly db: Kysely<AuthTables>,
    private readonly settings: HourlyLimitSettings<Column>,
  ) {}

  async count(values: Record<Column, string>, now: Date): Promise<Counted> {
    const { table, at, counted, interval } = this.settings;
    const id = await this.db.transaction().execute(async (trx) => {
      await lockKeys(
        trx,
        `sealpost.auth.${table}`,
        counted.map(({ column, lockName }) => `${lockName}:${values[column]}`),
      );
      const hourAgo = new Date(now.getTime() - HOUR_MS);
      let wait = { ms: 0, limit: 'hourly' as RateLimit };
      const longer = (ms: number, limit: RateLimit) => {
        if (ms > wait.ms) wait = { ms, limit };
      };
      for (const { column, perHour } of counted) {
        const recent = await recentRecords(trx, this.settings, column, values[column], hourAgo, perHour);
        if (interval?.column === column && interval.ms > 0 && recent.latest)
          longer(recent.latest.getTime() + interval.ms - now.getTime(), 'interval');
        if (recent.limitTh) longer(recent.limitTh.getTime() + HOUR_MS - now.getTime(), 'hourly');
      }
      if (wait.ms > 0) throw rateLimited(wait.ms, wait.limit);
      const row = await anyTable(trx)
        .insertInto(table)
        .values({ ...values, [at]: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id as number;
    });
    return {
      release: async () => {
        await anyTable(this.db).deleteFrom(table).where('id', '=', id).execute();
      },
    };
  }

  /** Records older than an hour no longer count for anything. */
  async deleteOld(now: Date): Promise<number> {
    const { table, at } = this.settings;
    const result = await anyTable(this.db)
      .deleteFrom(table)
      .where(at, '<=', new Date(now.getTime() - HOUR_MS))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/**
 * The newest record for `value` since `since`, and the `limit`-th newest: only these two decide the
 * limits, so only these two are read (the index on (column, time) walks at most `limit` entries),
 * however many records a high limit lets through in an hour.
 */
async function recentRecords<Column extends string>(
  trx: Kysely<AuthTables>,
  settings: HourlyLimitSettings<Column>,
  column: Column,
  value: string,
  since: Date,
  limit: number,
): Promise<{ latest: Date | undefined; limitTh: Date | undefined }> {
  const { table, at } = settings;
  const db = anyTable(trx);
  const newest = () =>
    db
      .selectFrom(table)
      .select(at)
      .where(column as string, '=', value)
      .where(at, '>', since)
      .orderBy(at, 'desc');
  const row = await db
    .selectNoFrom([
      newest().limit(1).as('latest'),
      newest()
        .offset(limit - 1)
        .limit(1)
        .as('limit_th'),
    ])
    .executeTakeFirstOrThrow();
  return { latest: row.latest ?? undefined, limitTh: row.limit_th ?? undefined };
}

/** The tables a limit counts in have the same shape (an id, the counted columns, a time), named per use. */
// biome-ignore lint/suspicious/noExplicitAny: one class for two tables of that shape; the settings name the columns
const anyTable = (db: Kysely<AuthTables>) => db as unknown as Kysely<any>;

/**
 * Which limit made a request wait: `interval`, the shortest gap between two codes to one destination (a code
 * went a moment ago: the reader is told to wait, not that they asked too often), or `hourly`, a count per hour.
 */
export type RateLimit = 'interval' | 'hourly';

/**
 * The one answer of every code-request limit (docs/design.md#rate-limits): 429 sms_rate_limit with
 * Retry-After in seconds, and which limit it was.
 */
export function rateLimited(waitMs: number, limit: RateLimit = 'hourly'): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError('sms_rate_limit', 429, `Too many codes requested; try again in ${seconds} s`, {
    headers: { 'retry-after': String(seconds) },
    details: { limit },
  });
}

/**
 * Takes a transaction-scoped advisory lock on each key of `namespace`, so that the check and the
 * record of one request are atomic against other instances. Sorted, so that two requests needing the
 * same locks take them in the same order (no deadlock).
 */
async function lockKeys(trx: Kysely<AuthTables>, namespace: string, keys: string[]): Promise<void> {
  for (const key of [...keys].sort()) {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`${namespace}.${key}`}, 0))`.execute(trx);
  }
}
