import { sql, type Kysely } from 'kysely';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { ExchangeTables } from '../tables.ts';

/** Rows removed per statement. */
const BATCH = 1000;

/**
 * The recovery rule of the overlapped intake (docs/design.md#durability-of-intake): an envelope row still
 * `storing` after `graceMs` belongs to an intake that died between writing its row and acknowledging the
 * message (kill -9, a crash, a lost connection), so nobody was told 250/202. Such rows are deleted with
 * their payload, if one was stored; they are never claimed, delivered or bounced. A live intake slower
 * than the grace finds its row gone when it acknowledges and answers 451: the sweep can only cost a
 * retry, never a message. The age is measured in the database's clock, so every instance may sweep.
 */
export class AbandonedIntakeSweep {
  constructor(
    private readonly deps: { db: Kysely<ExchangeTables>; objects: ObjectStore; graceMs: number; logger: Logger },
  ) {}

  /** One pass; returns how many rows were deleted. */
  async sweep(): Promise<number> {
    const { db, objects, graceMs, logger } = this.deps;
    let deleted = 0;
    for (;;) {
      const rows = await db
        .deleteFrom('envelopes')
        .where('id', 'in', (qc) =>
          qc
            .selectFrom('envelopes')
            .select('id')
            .where('status', '=', 'storing')
            .where('updated_at', '<', sql<Date>`now() - make_interval(secs => ${graceMs / 1000})`)
            .limit(BATCH)
            .forUpdate()
            .skipLocked(),
        )
        // The acknowledgement may have won the row's lock meanwhile: it is no longer ours then.
        .where('status', '=', 'storing')
        .returning('payload_key')
        .execute();
      if (rows.length === 0) break;
      // A payload missing (never stored) is no error; one still being stored is left to OrphanPayloadSweep.
      await objects.deleteMany(rows.map((row) => row.payload_key));
      deleted += rows.length;
      if (rows.length < BATCH) break;
    }
    // Worded as OrphanPayloadSweep's line: for an operator both are payloads of intakes cut short.
    if (deleted > 0)
      logger.warn(
        { deleted, rows: deleted },
        'deleted payloads without an envelope that was acknowledged, ' +
          'with their `storing` rows (left by an intake that was cut short)',
      );
    return deleted;
  }
}
