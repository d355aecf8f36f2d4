import type { Kysely } from 'kysely';

/**
 * The sender's page (docs/specification.md#auth-endpoints-for-senders): the address a session proved as a
 * sender's, by an email code to it. On the session row, so that the session cache serves it with the rest and
 * the trigger of 0006 announces its change; null for a recipient's session, which the sender's routes refuse.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('sender', 'text').execute();
}
