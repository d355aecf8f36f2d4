import type { Kysely } from 'kysely';
import { type Clock, systemClock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { AuthTables } from '../tables.ts';
import type { EndedDrafts, EndedLookup } from './ended.ts';

export interface WatcherOptions {
  db: Kysely<AuthTables>;
  objects: ObjectStore;
  /** ATTACHMENTS_RETENTION_PERIOD: nothing changed more recently than this is touched. */
  retentionMs: number;
  logger: Logger;
  /** What "older than the period" is measured from; the system clock by default. */
  clock?: Clock;
  /** Drafts handled per transaction. */
  batchSize?: number;
  /** The drafts of sealed messages that ended, and B to ask which those are (docs/specification.md#end-dates). */
  ended?: { drafts: EndedDrafts; seal: EndedLookup };
}

export interface SweepResult {
  drafts: number;
  files: number;
}

/**
 * The expired-attachments watcher (docs/specification.md#auth-variables): deletes unsent drafts whose last
 * change is older than ATTACHMENTS_RETENTION_PERIOD — their files (objects, then rows) and the draft itself,
 * which survives for that period (docs/design.md#expired-drafts) — and what is left of sent drafts. Never
 * anything changed inside the period, so with the watcher running every EXPIRED_ATTACHMENTS_WATCHER_INTERVAL
 * a file lives at most retention + interval. Then the drafts of messages that ended (expired, withdrawn for
 * everyone): B is asked which of the messages with drafts have, and their drafts and files go (drafts/ended.ts).
 *
 * Every auth instance runs it. Each batch locks its drafts with FOR UPDATE SKIP LOCKED, so two watchers
 * at once take different drafts and every object is deleted once; an upload finishing on a draft being
 * deleted waits for the lock, then finds the draft gone and deletes its own object.
 */
export class ExpiredDraftsWatcher {
  private readonly batchSize: number;

  constructor(private readonly options: WatcherOptions) {
    this.batchSize = options.batchSize ?? 50;
  }

  async sweep(now = new Date((this.options.clock ?? systemClock).now())): Promise<SweepResult> {
    const cutoff = new Date(now.getTime() - this.options.retentionMs);
    const result: SweepResult = { drafts: 0, files: 0 };
    // Each batch deletes what it locked, so the loop ends once nothing expired is left unlocked.
    for (;;) {
      const batch = await this.deleteExpiredDrafts(cutoff);
      result.drafts += batch.drafts;
      result.files += batch.files;
      if (batch.drafts < this.batchSize) break;
    }
    for (;;) {
      const files = await this.deleteAbandonedUploads(cutoff);
      result.files += files;
      if (files < this.batchSize) break;
    }
    // Last: when B cannot be asked, the expired drafts above are gone all the same.
    if (this.options.ended) {
      const ended = await this.options.ended.drafts.sweep(this.options.ended.seal);
      result.drafts += ended.drafts;
      result.files += ended.files;
    }
    return result;
  }

  /** Runs sweep() now and every `intervalMs`; stop() waits for a sweep under way. */
  start(intervalMs: number) {
    let running: Promise<void> | undefined;
    const run = () => {
      running ??= (async () => {
        try {
          const result = await this.sweep();
          if (result.files + result.drafts > 0)
            this.options.logger.info(result, 'expired reply drafts and attachments deleted');
        } catch (error) {
          this.options.logger.warn({ err: error }, 'expired-attachments watcher failed; next try at the next interval');
        } finally {
          running = undefined;
        }
      })();
      return running;
    };
    // setInterval takes at most 2^31-1 ms (24.8 days).
    const timer = setInterval(run, Math.min(intervalMs, 2 ** 31 - 1));
    timer.unref();
    // Also once at start: instances restarted more often than the interval would otherwise never sweep.
    void run();
    return {
      run,
      async stop() {
        clearInterval(timer);
        await running;
      },
    };
  }

  private async deleteExpiredDrafts(cutoff: Date): Promise<SweepResult> {
    const { db, objects } = this.options;
    return db.transaction().execute(async (trx) => {
      const drafts = await trx
        .selectFrom('drafts')
        .select('id')
        .where((eb) => eb.or([eb('updated_at', '<', cutoff), eb('sent_at', 'is not', null)]))
        .orderBy('updated_at')
        .limit(this.batchSize)
        .forUpdate()
        .skipLocked()
        .execute();
      if (drafts.length === 0) return { drafts: 0, files: 0 };
      const ids = drafts.map((draft) => draft.id);
      const files = await trx.selectFrom('draft_files').select('object_key').where('draft_id', 'in', ids).execute();
      // A failed delete throws: the transaction rolls back and the rows stay for the next run.
      for (const file of files) await objects.delete(file.object_key);
      await trx.deleteFrom('drafts').where('id', 'in', ids).execute();
      return { drafts: ids.length, files: files.length };
    });
  }

  /** Uploads that never finished (the instance died mid-upload) in drafts that are still in use. */
  private async deleteAbandonedUploads(cutoff: Date): Promise<number> {
    const { db, objects } = this.options;
    return db.transaction().execute(async (trx) => {
      const files = await trx
        .selectFrom('draft_files')
        .select(['id', 'object_key'])
        .where('state', '=', 'uploading')
        .where('created_at', '<', cutoff)
        .limit(this.batchSize)
        .forUpdate()
        .skipLocked()
        .execute();
      if (files.length === 0) return 0;
      for (const file of files) await objects.delete(file.object_key);
      await trx
        .deleteFrom('draft_files')
        .where(
          'id',
          'in',
          files.map((file) => file.id),
        )
        .execute();
      return files.length;
    });
  }
}
