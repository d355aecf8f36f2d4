import { type Kysely, sql } from 'kysely';
import type { ReportedTrailEventName, TrailDetail } from '../../contracts/seal.ts';
import type { Clock } from '../../kernel/clock.ts';
import type { SealedTrailEntry, SealTables } from '../tables.ts';

/** An event the auth service or the exchange reports (POST /v1/sealed/{id}/events). */
export interface ReportedEvent {
  event: ReportedTrailEventName;
  /** Normalised address. */
  recipient?: string;
  client?: string;
  detail?: TrailDetail;
}

const RETENTION_BATCH = 1000;

/**
 * The trail in PostgreSQL (docs/specification.md#trail). Entries are only ever inserted: here for the reported
 * events, and by the statements that seal and end a message (SealedStore, EndStore, ExpiryStore) for the seal
 * service's own. The one deletion is the retention's, which the database allows for old entries alone.
 */
export class TrailStore {
  constructor(
    private readonly db: Kysely<SealTables>,
    private readonly clock: Clock,
  ) {}

  /**
   * Appends a reported event; undefined when there is no such message. `first` is decided by the partial unique
   * index on the first entries, in the same statement: of two concurrent reports exactly one is first, as the
   * second insert waits for the first one's transaction and then yields to it.
   */
  async record(id: string, event: ReportedEvent): Promise<{ first: boolean } | undefined> {
    const at = new Date(this.clock.now());
    const row = (first: boolean) =>
      this.db
        .selectFrom('sealed_messages')
        .select([
          'id as sealed_id',
          sql<Date>`cast(${at} as timestamptz)`.as('at'),
          sql<string>`cast(${event.event} as text)`.as('event'),
          sql<string | null>`cast(${event.recipient ?? null} as text)`.as('recipient'),
          sql<string | null>`cast(${event.client ?? null} as text)`.as('client'),
          sql<string | null>`cast(${event.detail ? JSON.stringify(event.detail) : null} as jsonb)`.as('detail'),
          sql<boolean>`${first}`.as('first'),
        ])
        .where('id', '=', id);
    const columns = ['sealed_id', 'at', 'event', 'recipient', 'client', 'detail', 'first'] as const;
    const inserted = await this.db
      .with('firsts', (db) =>
        db
          .insertInto('sealed_trail')
          .columns([...columns])
          .expression(row(true))
          .onConflict((oc) =>
            oc
              .expression(sql`sealed_id, event, (lower(coalesce(recipient, '')))`)
              .where('first', '=', true)
              .doNothing(),
          )
          .returning('first'),
      )
      .with('again', (db) =>
        db
          .insertInto('sealed_trail')
          .columns([...columns])
          .expression(row(false).where(sql<boolean>`not exists (select from firsts)`))
          .returning('first'),
      )
      .selectFrom('firsts')
      .select('first')
      .unionAll((db) => db.selectFrom('again').select('first'))
      .executeTakeFirst();
    return inserted && { first: inserted.first };
  }

  /** A message's trail in the order written. */
  async entries(id: string): Promise<SealedTrailEntry[]> {
    return this.db.selectFrom('sealed_trail').selectAll().where('sealed_id', '=', id).orderBy('seq').execute();
  }

  /**
   * Deletes the entries older than `retentionMs`, batch by batch; returns how many. Each batch states the retention
   * to the database (`seal.trail_retention`, for its transaction alone), whose trigger refuses any younger entry.
   */
  async deleteOlderThan(retentionMs: number): Promise<number> {
    // The database's clock, as its trigger goes by it.
    const retention = `${retentionMs} milliseconds`;
    let deleted = 0;
    for (;;) {
      const batch = await this.db.transaction().execute(async (trx) => {
        await sql`select set_config('seal.trail_retention', ${retention}, true)`.execute(trx);
        const rows = await trx
          .deleteFrom('sealed_trail')
          .where('seq', 'in', (eb) =>
            eb
              .selectFrom('sealed_trail')
              .select('seq')
              .where('at', '<', sql<Date>`now() - cast(${retention} as interval)`)
              .limit(RETENTION_BATCH),
          )
          .returning('seq')
          .execute();
        return rows.length;
      });
      deleted += batch;
      if (batch < RETENTION_BATCH) return deleted;
    }
  }
}
