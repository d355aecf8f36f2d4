import type { Kysely } from 'kysely';
import { type Clock, systemClock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import { every } from '../delivery/periodic.ts';
import type { ExchangeTables } from '../tables.ts';

export interface ArchiveSettings {
  /** STATUS_ARCHIVE_AFTER: live rows older than this move to the archive. */
  afterMs: number;
  /** STATUS_ARCHIVE_RETENTION: archived rows older than this are deleted (10 years by default). */
  retentionMs: number;
  /** Rows per transaction, so one run never holds locks or a huge transaction for long. */
  batchSize?: number;
}

/**
 * One pass of the archive job (docs/specification.md#retention, rule 3;
 * docs/design.md#retention-and-archive): moves status rows older than `after` to message_status_archive, then
 * deletes archived rows older than `retention`, batch by batch. Each batch is one statement, hence one
 * transaction: the rows are locked with `FOR UPDATE SKIP LOCKED`, deleted and inserted into the archive
 * together, so a row is always in exactly one of the two tables, and instances running the job at the same
 * time take different rows. Age is the row's created_at against `now`, the service's clock.
 */
export async function archiveStatusHistory(
  db: Kysely<ExchangeTables>,
  settings: ArchiveSettings,
  now = new Date(),
): Promise<{ archived: number; purged: number }> {
  const batchSize = settings.batchSize ?? 1000;
  const ago = (ms: number) => new Date(now.getTime() - ms);
  let archived = 0;
  for (;;) {
    const moved = await archiveBatch(db, ago(settings.afterMs), batchSize).executeTakeFirst();
    const count = Number(moved.numInsertedOrUpdatedRows ?? 0n);
    archived += count;
    if (count < batchSize) break;
  }

  let purged = 0;
  for (;;) {
    const deleted = await db
      .deleteFrom('message_status_archive')
      .where('id', 'in', (db) =>
        db
          .selectFrom('message_status_archive')
          .select('id')
          .where('created_at', '<', ago(settings.retentionMs))
          .orderBy('id')
          .limit(batchSize)
          .forUpdate()
          .skipLocked(),
      )
      .executeTakeFirst();
    const count = Number(deleted.numDeletedRows);
    purged += count;
    if (count < batchSize) break;
  }
  return { archived, purged };
}

/**
 * One batch of the archive's move: up to `batchSize` live rows created before `before`, deleted and inserted
 * into the archive in one statement. Exported for the test of its plan.
 */
export function archiveBatch(db: Kysely<ExchangeTables>, before: Date, batchSize: number) {
  return db
    .with('moved', (db) =>
      db
        .deleteFrom('message_status')
        // By the table's key, (envelope_id, id) (migration 0006). In no particular order: any old rows
        // will do, and the age index (BRIN) finds them in the table's order without sorting them all.
        .where((eb) =>
          eb(
            eb.refTuple('envelope_id', 'id'),
            'in',
            eb
              .selectFrom('message_status')
              .select(['envelope_id', 'id'])
              .where('created_at', '<', before)
              .limit(batchSize)
              .forUpdate()
              .skipLocked()
              .$asTuple('envelope_id', 'id'),
          ),
        )
        .returning(['id', 'envelope_id', 'status', 'detail', 'created_at']),
    )
    .insertInto('message_status_archive')
    .columns(['id', 'envelope_id', 'status', 'detail', 'created_at'])
    .expression((eb) =>
      eb
        .selectFrom('moved')
        .select(['moved.id', 'moved.envelope_id', 'moved.status', 'moved.detail', 'moved.created_at']),
    )
    .onConflict((oc) => oc.column('id').doNothing());
}

/** Runs the archive pass every STATUS_ARCHIVE_INTERVAL, the first one shortly after start. */
export function startStatusArchive(options: {
  db: Kysely<ExchangeTables>;
  settings: ArchiveSettings;
  intervalMs: number;
  clock?: Clock;
  logger: Logger;
}) {
  const { logger } = options;
  return every(
    options.intervalMs,
    async () => {
      try {
        const { archived, purged } = await archiveStatusHistory(
          options.db,
          options.settings,
          new Date((options.clock ?? systemClock).now()),
        );
        if (archived > 0 || purged > 0) logger.info({ archived, purged }, 'status history archived');
      } catch (error) {
        logger.warn({ err: error }, 'status archive pass failed; will try again at the next interval');
      }
    },
    { runFirstAfterMs: Math.min(options.intervalMs, 10_000) },
  );
}
