import { sql, type Kysely, type Transaction } from 'kysely';
import type { AuthTables, DraftFileRow, DraftRow } from '../tables.ts';

/** Whose draft: a sealed message and one of its recipients (address lower-cased, see emailKey). */
export interface DraftOwner {
  messageId: string;
  emailKey: string;
}

export interface DraftContent {
  text: string;
  html: string | null;
  /** Left out: the draft keeps the bcc it has (a send saves the text before the bcc is checked). */
  bcc?: string | null;
}

/** A file row being written: it exists (state `uploading`) before its object does. */
export interface NewDraftFile {
  id: string;
  objectKey: string;
  filename: string;
  contentType: string;
}

/**
 * Reply drafts and their file rows (the objects are the callers'). Every change to a draft moves its
 * updated_at, from which the retention period counts. Changes that depend on the draft's total size
 * lock the draft row, so two uploads at once cannot both slip under REPLY_MAX_TOTAL_SIZE.
 */
export class DraftStore {
  constructor(
    private readonly db: Kysely<AuthTables>,
    /** How long a send may take before its claim counts as abandoned (an instance died mid-send). */
    private readonly sendClaimMs: number,
  ) {}

  /** A send is under way: the draft must not change under it (what was sent is what gets deleted). */
  isSending(draft: DraftRow, now: Date): boolean {
    return draft.sending_since !== null && now.getTime() - draft.sending_since.getTime() < this.sendClaimMs;
  }

  async findOpen(owner: DraftOwner): Promise<DraftRow | undefined> {
    return this.db
      .selectFrom('drafts')
      .selectAll()
      .where('message_id', '=', owner.messageId)
      .where('email_key', '=', owner.emailKey)
      .where('sent_at', 'is', null)
      .executeTakeFirst();
  }

  /** Saves the text (PUT /v1/message/reply), starting the draft when there is none. */
  async save(owner: DraftOwner, content: DraftContent, now: Date): Promise<DraftRow | 'sending'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await this.lockOpen(trx, owner, now);
      if (this.isSending(draft, now)) return 'sending' as const;
      return trx
        .updateTable('drafts')
        .set({ text: content.text, html: content.html, ...(content.bcc !== undefined ? { bcc: content.bcc } : {}), updated_at: now })
        .where('id', '=', draft.id)
        .returningAll()
        .executeTakeFirstOrThrow();
    });
  }

  /** The draft's stored files (not those still uploading), oldest first. */
  async files(draftId: string): Promise<DraftFileRow[]> {
    return this.db
      .selectFrom('draft_files')
      .selectAll()
      .where('draft_id', '=', draftId)
      .where('state', '=', 'stored')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /**
   * Registers an upload before a byte is stored. Answers the bytes the draft may still take (the limit
   * less its stored files), or 'full' — then nothing is registered.
   */
  async beginUpload(owner: DraftOwner, file: (draftId: string) => NewDraftFile, maxTotal: number, now: Date): Promise<{ draftId: string; file: NewDraftFile; remaining: number } | 'full' | 'sending'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await this.lockOpen(trx, owner, now);
      if (this.isSending(draft, now)) return 'sending' as const;
      const remaining = maxTotal - (await storedTotal(trx, draft.id));
      if (remaining <= 0) return 'full' as const;
      const row = file(draft.id);
      await trx
        .insertInto('draft_files')
        .values({ id: row.id, draft_id: draft.id, object_key: row.objectKey, filename: row.filename, content_type: row.contentType, state: 'uploading', created_at: now })
        .execute();
      await trx.updateTable('drafts').set({ updated_at: now }).where('id', '=', draft.id).execute();
      return { draftId: draft.id, file: row, remaining };
    });
  }

  /**
   * Marks an upload stored, unless the draft is gone (sent, or removed by the watcher meanwhile) or the
   * draft's files would pass the total limit with it (other uploads finished first).
   */
  async completeUpload(
    draftId: string,
    fileId: string,
    values: { size: number; contentType: string; detectedType: string | null; scanned: boolean },
    maxTotal: number,
    now: Date,
  ): Promise<'stored' | 'over_limit' | 'gone' | 'sending'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await trx.selectFrom('drafts').selectAll().where('id', '=', draftId).where('sent_at', 'is', null).forUpdate().executeTakeFirst();
      if (!draft) return 'gone' as const;
      if (this.isSending(draft, now)) return 'sending' as const;
      if ((await storedTotal(trx, draftId)) + values.size > maxTotal) return 'over_limit' as const;
      const updated = await trx
        .updateTable('draft_files')
        .set({ size: values.size, content_type: values.contentType, detected_type: values.detectedType, scanned: values.scanned, state: 'stored' })
        .where('id', '=', fileId)
        .where('draft_id', '=', draftId)
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n) return 'gone' as const;
      await trx.updateTable('drafts').set({ updated_at: now }).where('id', '=', draftId).execute();
      return 'stored' as const;
    });
  }

  async findFile(draftId: string, fileId: string): Promise<DraftFileRow | undefined> {
    return this.db.selectFrom('draft_files').selectAll().where('draft_id', '=', draftId).where('id', '=', fileId).executeTakeFirst();
  }

  /** Removes a file row; `touch` moves the draft's updated_at (a change the reader made). */
  async deleteFile(draftId: string, fileId: string, touch: Date | undefined): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const deleted = await trx.deleteFrom('draft_files').where('draft_id', '=', draftId).where('id', '=', fileId).executeTakeFirst();
      if (touch && deleted.numDeletedRows > 0n) await trx.updateTable('drafts').set({ updated_at: touch }).where('id', '=', draftId).execute();
      return deleted.numDeletedRows > 0n;
    });
  }

  /**
   * Claims the draft for sending, so a second POST (double click, second device) does not send it twice.
   * A claim older than sendClaimMs is from an instance that died mid-send and may be taken over.
   */
  async claimForSending(draftId: string, now: Date): Promise<boolean> {
    const claimed = await this.db
      .updateTable('drafts')
      .set({ sending_since: now, updated_at: now })
      .where('id', '=', draftId)
      .where('sent_at', 'is', null)
      .where((eb) => eb.or([eb('sending_since', 'is', null), eb('sending_since', '<', new Date(now.getTime() - this.sendClaimMs))]))
      .executeTakeFirst();
    return claimed.numUpdatedRows > 0n;
  }

  async releaseSending(draftId: string): Promise<void> {
    await this.db.updateTable('drafts').set({ sending_since: null }).where('id', '=', draftId).execute();
  }

  /** The exchange engine has the reply: from now on the draft is only waiting for its files to go. */
  async markSent(draftId: string, now: Date): Promise<void> {
    await this.db.updateTable('drafts').set({ sent_at: now, sending_since: null }).where('id', '=', draftId).execute();
  }

  /**
   * Deletes the draft and its file rows (ON DELETE CASCADE) after `removeObjects` removed their objects,
   * holding the draft's row lock throughout. A draft locked elsewhere (the watcher is deleting it) is
   * left alone: 'busy'. A failure in removeObjects rolls back, so the rows stay to retry from.
   */
  async deleteWithFiles(draftId: string, removeObjects: (files: DraftFileRow[]) => Promise<void>): Promise<number | 'busy'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await trx.selectFrom('drafts').select('id').where('id', '=', draftId).forUpdate().skipLocked().executeTakeFirst();
      if (!draft) return 'busy' as const;
      const files = await trx.selectFrom('draft_files').selectAll().where('draft_id', '=', draftId).execute();
      await removeObjects(files);
      await trx.deleteFrom('drafts').where('id', '=', draftId).execute();
      return files.length;
    });
  }

  /** The open draft, created when missing, locked for the rest of the transaction. */
  private async lockOpen(trx: Transaction<AuthTables>, owner: DraftOwner, now: Date): Promise<DraftRow> {
    await trx
      .insertInto('drafts')
      .values({ message_id: owner.messageId, email_key: owner.emailKey, html: null, bcc: null, created_at: now, updated_at: now, sending_since: null, sent_at: null })
      .onConflict((oc) => oc.columns(['message_id', 'email_key']).where('sent_at', 'is', null).doNothing())
      .execute();
    return trx
      .selectFrom('drafts')
      .selectAll()
      .where('message_id', '=', owner.messageId)
      .where('email_key', '=', owner.emailKey)
      .where('sent_at', 'is', null)
      .forUpdate()
      .executeTakeFirstOrThrow();
  }
}

async function storedTotal(trx: Kysely<AuthTables>, draftId: string): Promise<number> {
  const row = await trx
    .selectFrom('draft_files')
    .select(sql<number>`coalesce(sum(size), 0)::bigint`.as('total'))
    .where('draft_id', '=', draftId)
    .where('state', '=', 'stored')
    .executeTakeFirstOrThrow();
  return Number(row.total);
}
