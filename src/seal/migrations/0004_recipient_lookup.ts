import type { Kysely } from 'kysely';

/**
 * The sealed messages of one recipient, newest first (GET /v1/recipients/{email}/sealed): the auth
 * service lists them for a reader whose session has proven that address.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('sealed_recipients_email_key').on('sealed_recipients').column('email_key').execute();
  await db.schema.createIndex('sealed_messages_sealed_at').on('sealed_messages').column('sealed_at').execute();
}
