import type { Kysely } from 'kysely';

/**
 * The language a sender chose for a recipient (X-Sealpost-Language), null when none was given: the
 * exchange then writes the notification in NOTIFY_DEFAULT_LANGUAGE, and auth its email codes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sealed_recipients').addColumn('language', 'text').execute();
}
