import type { Kysely } from 'kysely';

/**
 * The version of each recipient's reply to a sealed message: an integer raised by every change (text
 * saved, file added or removed, sent). It belongs to the (message, recipient) pair rather than to a
 * draft row, so it keeps rising across drafts: a window still holding the version of a draft that was
 * sent (and deleted) meanwhile can never match the next draft's. Changes carry the version they were
 * made against (If-Match); an outdated one is refused with draft_conflict.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('draft_versions')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('draft_versions_pkey', ['message_id', 'email_key'])
    .execute();
}
