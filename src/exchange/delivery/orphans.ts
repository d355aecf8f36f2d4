import type { Kysely } from 'kysely';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { ExchangeTables } from '../tables.ts';

const PREFIX = 'exchange/payloads/';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Envelope ids looked up per query: one ListObjects page. */
const BATCH = 1000;

/**
 * Deletes payloads that have no envelope row (docs/specification.md#retention, rule 1: no payload outlives
 * its message). MessageIntake stores the payload before it writes the row; when the process dies between
 * the two, or the row's insert fails with its outcome unknown, the object can stay in the bucket without a
 * row for ever. accept() deletes it itself on every failure it lives to see; this is for the rest. So is the
 * payload of a delivered message whose row went with its `delivered` mark (EnvelopeQueue.markDelivered) when
 * the process died before the payload's deletion, or its clean-up was left behind (EnvelopeFinisher.finishSoon
 * past CLEANUPS_WAITING_MAX).
 *
 * A payload is an orphan when it had no row at one sweep and still has none at a sweep at least `graceMs`
 * (DELIVERY_LEASE) later. The object was complete when first listed, and an intake's row is written right
 * after its payload (waiting at most the pool's 5 s connection timeout for a connection), so a row that has
 * not come a lease period later never will: the same rule by which a delivery whose lease ran out is taken
 * for dead. Sightings are kept in memory only: after a restart the wait starts again, which can only delay a
 * deletion. Every instance may sweep; deleting a missing object is no error.
 */
export class OrphanPayloadSweep {
  /** Payload keys seen without a row, with the time of the first sighting. */
  private suspects = new Map<string, number>();

  constructor(
    private readonly deps: {
      db: Kysely<ExchangeTables>;
      objects: ObjectStore;
      graceMs: number;
      logger: Logger;
      /**
       * Whether a payload's deletion is under way or waiting in this instance (EnvelopeFinisher.deleting): a
       * delivered message's row goes before its payload, whose deletion may wait seconds for the intake.
       */
      deleting?: (key: string) => boolean;
      /** A monotonic clock in ms (tests pass their own). */
      now?: () => number;
    },
  ) {}

  /** One pass over the payloads; returns how many were deleted. */
  async sweep(): Promise<number> {
    const seen = new Map<string, number>();
    let deleted = 0;
    let page: string[] = [];
    const check = async () => {
      deleted += await this.checkPage(page, seen);
      page = [];
    };
    for await (const object of this.deps.objects.list(PREFIX)) {
      // Only keys the intake could have written (`exchange/payloads/<envelope uuid>`).
      if (!UUID.test(object.key.slice(PREFIX.length))) continue;
      page.push(object.key);
      if (page.length === BATCH) await check();
    }
    if (page.length > 0) await check();
    // Suspects no longer listed are gone; those that got their row were dropped by checkPage.
    this.suspects = seen;
    if (deleted > 0)
      this.deps.logger.warn(
        { deleted },
        'deleted payloads without an envelope (left by an intake or a delivery that was cut short)',
      );
    return deleted;
  }

  private async checkPage(keys: string[], seen: Map<string, number>): Promise<number> {
    const { db, objects, graceMs, logger } = this.deps;
    const ids = keys.map((key) => key.slice(PREFIX.length));
    const rows = await db.selectFrom('envelopes').select('id').where('id', 'in', ids).execute();
    const withRow = new Set(rows.map((row) => row.id));
    const now = (this.deps.now ?? performance.now.bind(performance))();
    let deleted = 0;
    for (const key of keys) {
      if (withRow.has(key.slice(PREFIX.length)) || this.deps.deleting?.(key)) continue;
      const since = this.suspects.get(key) ?? now;
      if (now - since < graceMs) {
        seen.set(key, since);
        continue;
      }
      try {
        await objects.delete(key);
        deleted++;
        logger.info({ key }, 'deleted a payload without an envelope');
      } catch (error) {
        seen.set(key, since);
        logger.warn({ err: error, key }, 'could not delete a payload without an envelope; will try again');
      }
    }
    return deleted;
  }
}
