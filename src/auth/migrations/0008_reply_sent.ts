import type { Kysely } from 'kysely';

/**
 * When each recipient's reply to a sealed message was last sent, and the version that send gave it. The sent
 * draft is deleted at once, so this is what is left to tell a window still holding an older version that its
 * draft went out (reply_already_sent with sentAt) rather than that it changed (draft_conflict).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('draft_versions')
    .addColumn('sent_at', 'timestamptz')
    .addColumn('sent_version', 'integer')
    .execute();
}
