import type { Kysely } from 'kysely';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { EndedMessages } from '../seal/client.ts';
import type { AuthTables } from '../tables.ts';

/** The most ids one POST /v1/sealed/ended asks about (EndedQuerySchema). */
export const ENDED_QUERY_MAX = 500;

/** B's answer to which sealed messages have ended (SealClient.ended). */
export interface EndedLookup {
  ended(ids: string[]): Promise<EndedMessages>;
}

/**
 * The reply drafts of sealed messages that ended (docs/specification.md#end-dates): their content is gone, so
 * are the replies to it, files included. Deleted by the drafts watcher for every message B lists as ended, and at
 * once for the reader a request of theirs met a 410 for. Each batch locks its drafts (FOR UPDATE SKIP LOCKED)
 * as the watcher's own batches do, so two instances delete each object once; a failed object delete rolls the
 * batch back and the next run deletes it again: at least once, and deleting what is gone already is no error.
 */
export class EndedDrafts {
  constructor(
    private readonly options: {
      db: Kysely<AuthTables>;
      objects: ObjectStore;
      /** Drafts deleted per transaction. */
      batchSize?: number;
    },
  ) {}

  /** Asks B which messages with drafts have ended (≤ 500 ids a question) and deletes those drafts. */
  async sweep(seal: EndedLookup): Promise<{ drafts: number; files: number }> {
    const result = { drafts: 0, files: 0 };
    let after = '';
    for (;;) {
      // One page of the message ids that have drafts, in order, so each is asked about once per sweep.
      const page = await this.options.db
        .selectFrom('drafts')
        .select('message_id')
        .distinct()
        .where('message_id', '>', after)
        .orderBy('message_id')
        .limit(ENDED_QUERY_MAX)
        .execute();
      if (page.length === 0) break;
      after = page[page.length - 1]!.message_id;
      const ended = await seal.ended(page.map((row) => row.message_id));
      if (ended.length > 0) {
        const deleted = await this.delete(ended.map((entry) => entry.id));
        result.drafts += deleted.drafts;
        result.files += deleted.files;
      }
      if (page.length < ENDED_QUERY_MAX) break;
    }
    return result;
  }

  /**
   * Deletes the drafts of these messages (of one recipient alone with `emailKey`: a withdrawal for them) and their
   * files, objects first. Drafts locked elsewhere meanwhile are left for the next run.
   */
  async delete(messageIds: string[], emailKey?: string): Promise<{ drafts: number; files: number }> {
    const { db, objects } = this.options;
    const batchSize = this.options.batchSize ?? 50;
    const result = { drafts: 0, files: 0 };
    if (messageIds.length === 0) return result;
    for (;;) {
      const batch = await db.transaction().execute(async (trx) => {
        let query = trx.selectFrom('drafts').select('id').where('message_id', 'in', messageIds);
        if (emailKey !== undefined) query = query.where('email_key', '=', emailKey);
        const drafts = await query.orderBy('id').limit(batchSize).forUpdate().skipLocked().execute();
        if (drafts.length === 0) return { drafts: 0, files: 0 };
        const ids = drafts.map((draft) => draft.id);
        const files = await trx.selectFrom('draft_files').select('object_key').where('draft_id', 'in', ids).execute();
        for (const file of files) await objects.delete(file.object_key);
        await trx.deleteFrom('drafts').where('id', 'in', ids).execute();
        return { drafts: ids.length, files: files.length };
      });
      result.drafts += batch.drafts;
      result.files += batch.files;
      if (batch.drafts < batchSize) return result;
    }
  }

  /**
   * After a request met the end of `messageId` for the reader `emailKey`: their draft goes at once. A failure is
   * logged, not answered: the reader is told the message ended either way, and the watcher or their next request
   * deletes it.
   */
  async deleteAfterEnd(messageId: string, emailKey: string, logger: Pick<Logger, 'warn' | 'info'>): Promise<void> {
    try {
      const deleted = await this.delete([messageId], emailKey);
      if (deleted.drafts > 0) logger.info({ messageId, ...deleted }, 'reply draft of an ended message deleted');
    } catch (error) {
      logger.warn({ err: error, messageId }, 'could not delete the reply draft of an ended message yet');
    }
  }
}
