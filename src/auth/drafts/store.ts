import { sql, type Kysely, type Transaction } from 'kysely';
import { AppError } from '../../kernel/errors.ts';
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

/**
 * The version a change was made against (the client's If-Match): the change is refused with
 * draft_conflict unless it is still the current one. Undefined: no check (a client that sends none).
 */
export type ExpectedVersion = number | undefined;

/** A saved draft with the version its change gave it. */
export type VersionedDraft = DraftRow & { version: number };

export const draftConflict = () =>
  new AppError(
    'draft_conflict',
    409,
    'The reply was changed elsewhere (another window or device) since the version sent in If-Match; load it again',
  );

/**
 * A change made against a version from before the reply was last sent: the draft it was made on went out
 * (from another window or device). Said apart from draft_conflict so that the page can say when it went.
 */
export const replyAlreadySent = (sentAt: Date) =>
  new AppError('reply_already_sent', 409, 'The reply was sent meanwhile (another window or device)', {
    details: { sentAt: sentAt.toISOString() },
  });

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
 *
 * Every change also raises the reply's version (table draft_versions, one row per message and
 * recipient, kept across drafts) in the same transaction, with a conditional UPDATE … WHERE version = $v
 * when the client sent the version it has: of two changes made against the same version only the first
 * passes, the second throws draft_conflict and its transaction rolls back.
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

  /** The reply's current version: 0 before its first change. */
  async version(owner: DraftOwner): Promise<number> {
    return (await this.versionAndSent(owner)).version;
  }

  /** The reply's current version, and when a reply to this message was last sent (undefined: never). */
  async versionAndSent(owner: DraftOwner): Promise<{ version: number; sentAt: Date | undefined }> {
    const row = await this.db
      .selectFrom('draft_versions')
      .select(['version', 'sent_at'])
      .where('message_id', '=', owner.messageId)
      .where('email_key', '=', owner.emailKey)
      .executeTakeFirst();
    return { version: row?.version ?? 0, sentAt: row?.sent_at ?? undefined };
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
  async save(
    owner: DraftOwner,
    content: DraftContent,
    now: Date,
    expected?: ExpectedVersion,
  ): Promise<VersionedDraft | 'sending'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await this.lockOpen(trx, owner, now);
      // An outdated version first: a window that missed a send (which claims the draft) hears why.
      await checkVersion(trx, owner, expected);
      if (this.isSending(draft, now)) return 'sending' as const;
      const version = await raiseVersion(trx, owner, expected);
      const saved = await trx
        .updateTable('drafts')
        .set({
          text: content.text,
          html: content.html,
          ...(content.bcc !== undefined ? { bcc: content.bcc } : {}),
          updated_at: now,
        })
        .where('id', '=', draft.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { ...saved, version };
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
  async beginUpload(
    owner: DraftOwner,
    file: (draftId: string) => NewDraftFile,
    maxTotal: number,
    now: Date,
    expected?: ExpectedVersion,
  ): Promise<{ draftId: string; file: NewDraftFile; remaining: number } | 'full' | 'sending'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await this.lockOpen(trx, owner, now);
      // Checked here, before a byte is stored, and again (atomically) when the file is stored.
      await checkVersion(trx, owner, expected);
      if (this.isSending(draft, now)) return 'sending' as const;
      const remaining = maxTotal - (await storedTotal(trx, draft.id));
      if (remaining <= 0) return 'full' as const;
      const row = file(draft.id);
      await trx
        .insertInto('draft_files')
        .values({
          id: row.id,
          draft_id: draft.id,
          object_key: row.objectKey,
          filename: row.filename,
          content_type: row.contentType,
          state: 'uploading',
          created_at: now,
        })
        .execute();
      await trx.updateTable('drafts').set({ updated_at: now }).where('id', '=', draft.id).execute();
      return { draftId: draft.id, file: row, remaining };
    });
  }

  /**
   * Marks an upload stored, unless the draft is gone (sent, or removed by the watcher meanwhile), the
   * draft's files would pass the total limit with it (other uploads finished first), or the reply
   * changed since the version the upload was begun against ('conflict'). Answers the new version.
   */
  async completeUpload(
    draftId: string,
    fileId: string,
    values: { size: number; contentType: string; detectedType: string | null; scanned: boolean },
    maxTotal: number,
    now: Date,
    expected?: ExpectedVersion,
  ): Promise<{ version: number } | 'over_limit' | 'gone' | 'sending' | 'conflict'> {
    const outcome = this.db.transaction().execute(async (trx) => {
      const draft = await trx
        .selectFrom('drafts')
        .selectAll()
        .where('id', '=', draftId)
        .where('sent_at', 'is', null)
        .forUpdate()
        .executeTakeFirst();
      if (!draft) return 'gone' as const;
      if (this.isSending(draft, now)) return 'sending' as const;
      if ((await storedTotal(trx, draftId)) + values.size > maxTotal) return 'over_limit' as const;
      const version = await raiseVersion(trx, ownerOf(draft), expected).catch((error: unknown) => {
        if (error instanceof AppError && error.errorCode === 'draft_conflict') return 'conflict' as const;
        throw error;
      });
      if (version === 'conflict') return version;
      const updated = await trx
        .updateTable('draft_files')
        .set({
          size: values.size,
          content_type: values.contentType,
          detected_type: values.detectedType,
          scanned: values.scanned,
          state: 'stored',
        })
        .where('id', '=', fileId)
        .where('draft_id', '=', draftId)
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n) throw new DraftGone();
      await trx.updateTable('drafts').set({ updated_at: now }).where('id', '=', draftId).execute();
      return { version };
    });
    // The file row vanished under the lock: roll the version back with the transaction.
    return outcome.catch((error: unknown) => {
      if (error instanceof DraftGone) return 'gone' as const;
      throw error;
    });
  }

  /** Removes a file row; `touch` moves the draft's updated_at (a change the reader made). */
  async deleteFile(draftId: string, fileId: string, touch: Date | undefined): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const deleted = await trx
        .deleteFrom('draft_files')
        .where('draft_id', '=', draftId)
        .where('id', '=', fileId)
        .executeTakeFirst();
      if (touch && deleted.numDeletedRows > 0n)
        await trx.updateTable('drafts').set({ updated_at: touch }).where('id', '=', draftId).execute();
      return deleted.numDeletedRows > 0n;
    });
  }

  /**
   * A reader removes a stored file (DELETE /v1/message/files/{id}): under the open draft's lock, the
   * version checked and raised, `removeObject` run (a failure there rolls everything back, so the row
   * stays to retry from and no object is orphaned), the row deleted. Answers the new version.
   */
  async removeFile(
    owner: DraftOwner,
    fileId: string,
    now: Date,
    expected: ExpectedVersion,
    removeObject: (file: DraftFileRow) => Promise<void>,
  ): Promise<number | 'not_found' | 'sending'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await openDraftLocked(trx, owner).executeTakeFirst();
      await checkVersion(trx, owner, expected);
      const file = draft
        ? await trx
            .selectFrom('draft_files')
            .selectAll()
            .where('draft_id', '=', draft.id)
            .where('id', '=', fileId)
            .executeTakeFirst()
        : undefined;
      if (!draft || !file || file.state !== 'stored') return 'not_found' as const;
      if (this.isSending(draft, now)) return 'sending' as const;
      const version = await raiseVersion(trx, owner, expected);
      await removeObject(file);
      await trx.deleteFrom('draft_files').where('id', '=', file.id).execute();
      await trx.updateTable('drafts').set({ updated_at: now }).where('id', '=', draft.id).execute();
      return version;
    });
  }

  /**
   * Claims the draft for sending, so a second POST (double click, second device) does not send it twice.
   * A claim older than sendClaimMs is from an instance that died mid-send and may be taken over. With
   * `expected`, only if the reply is still at that version (raised by the claim): 'conflict' otherwise.
   * Answers the new version, or false when the draft is claimed already (or was sent).
   */
  async claimForSending(draftId: string, now: Date, expected?: ExpectedVersion): Promise<number | false> {
    return this.db.transaction().execute(async (trx) => {
      const claimed = await trx
        .updateTable('drafts')
        .set({ sending_since: now, updated_at: now })
        .where('id', '=', draftId)
        .where('sent_at', 'is', null)
        .where((eb) =>
          eb.or([
            eb('sending_since', 'is', null),
            eb('sending_since', '<', new Date(now.getTime() - this.sendClaimMs)),
          ]),
        )
        .returning(['message_id', 'email_key'])
        .executeTakeFirst();
      if (!claimed) return false as const;
      return raiseVersion(trx, ownerOf(claimed), expected);
    });
  }

  async releaseSending(draftId: string): Promise<void> {
    await this.db.updateTable('drafts').set({ sending_since: null }).where('id', '=', draftId).execute();
  }

  /** The exchange engine has the reply: from now on the draft is only waiting for its files to go. */
  async markSent(draftId: string, now: Date): Promise<number | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const sent = await trx
        .updateTable('drafts')
        .set({ sent_at: now, sending_since: null })
        .where('id', '=', draftId)
        .returning(['message_id', 'email_key'])
        .executeTakeFirst();
      if (!sent) return undefined;
      const version = await raiseVersion(trx, ownerOf(sent), undefined);
      await trx
        .updateTable('draft_versions')
        .set({ sent_at: now, sent_version: version })
        .where('message_id', '=', sent.message_id)
        .where('email_key', '=', sent.email_key)
        .execute();
      return version;
    });
  }

  /**
   * Deletes the draft and its file rows (ON DELETE CASCADE) after `removeObjects` removed their objects,
   * holding the draft's row lock throughout. A draft locked elsewhere (the watcher is deleting it) is
   * left alone: 'busy'. A failure in removeObjects rolls back, so the rows stay to retry from.
   */
  async deleteWithFiles(
    draftId: string,
    removeObjects: (files: DraftFileRow[]) => Promise<void>,
  ): Promise<number | 'busy'> {
    return this.db.transaction().execute(async (trx) => {
      const draft = await trx
        .selectFrom('drafts')
        .select('id')
        .where('id', '=', draftId)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
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
      .values({
        message_id: owner.messageId,
        email_key: owner.emailKey,
        html: null,
        bcc: null,
        created_at: now,
        updated_at: now,
        sending_since: null,
        sent_at: null,
      })
      .onConflict((oc) => oc.columns(['message_id', 'email_key']).where('sent_at', 'is', null).doNothing())
      .execute();
    return openDraftLocked(trx, owner).executeTakeFirstOrThrow();
  }
}

/** The recipient's open (unsent) draft, locked for the rest of the transaction. */
function openDraftLocked(trx: Transaction<AuthTables>, owner: DraftOwner) {
  return trx
    .selectFrom('drafts')
    .selectAll()
    .where('message_id', '=', owner.messageId)
    .where('email_key', '=', owner.emailKey)
    .where('sent_at', 'is', null)
    .forUpdate();
}

/** Thrown inside a transaction to roll it back when the file row disappeared. */
class DraftGone extends Error {}

const ownerOf = (row: { message_id: string; email_key: string }): DraftOwner => ({
  messageId: row.message_id,
  emailKey: row.email_key,
});

/**
 * draft_conflict unless the reply is at `expected` (no check without one); reply_already_sent when the reply
 * was sent since `expected`. Not a lock: raiseVersion decides.
 */
async function checkVersion(trx: Transaction<AuthTables>, owner: DraftOwner, expected: ExpectedVersion): Promise<void> {
  if (expected === undefined) return;
  const row = await versionRow(trx, owner);
  if ((row?.version ?? 0) !== expected) throw outdated(row, expected);
}

function versionRow(trx: Transaction<AuthTables>, owner: DraftOwner) {
  return trx
    .selectFrom('draft_versions')
    .select(['version', 'sent_at', 'sent_version'])
    .where('message_id', '=', owner.messageId)
    .where('email_key', '=', owner.emailKey)
    .executeTakeFirst();
}

/** Why `expected` is outdated: a send made after it, or any other change. */
function outdated(row: { sent_at: Date | null; sent_version: number | null } | undefined, expected: number): AppError {
  if (row?.sent_at && row.sent_version !== null && expected < row.sent_version) return replyAlreadySent(row.sent_at);
  return draftConflict();
}

/**
 * Raises the reply's version by one and answers it. With `expected`, a conditional UPDATE … WHERE
 * version = expected: a concurrent change that raised it first (its row lock is waited for, then the
 * condition is evaluated again on the committed row) leaves nothing to update, and draft_conflict is
 * thrown so that the caller's transaction rolls back.
 */
async function raiseVersion(
  trx: Transaction<AuthTables>,
  owner: DraftOwner,
  expected: ExpectedVersion,
): Promise<number> {
  await trx
    .insertInto('draft_versions')
    .values({ message_id: owner.messageId, email_key: owner.emailKey, version: 0 })
    .onConflict((oc) => oc.columns(['message_id', 'email_key']).doNothing())
    .execute();
  let update = trx
    .updateTable('draft_versions')
    .set({ version: sql<number>`version + 1` })
    .where('message_id', '=', owner.messageId)
    .where('email_key', '=', owner.emailKey);
  if (expected !== undefined) update = update.where('version', '=', expected);
  const row = await update.returning('version').executeTakeFirst();
  if (!row) throw outdated(await versionRow(trx, owner), expected ?? 0);
  return row.version;
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
