import type { Kysely } from 'kysely';

/**
 * The last few codes a session's newer code replaced: their HMACs and targets as JSON, kept for their lifetime, so
 * that a reader who types the code of an SMS that came late is told it was replaced instead of losing a try of the
 * new code; and how many tries met such a code, so that they stay bounded too
 * (docs/decisions.md#the-reader-part-b-stable-screens).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('code_replaced', 'text')
    .addColumn('code_replaced_tries', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
