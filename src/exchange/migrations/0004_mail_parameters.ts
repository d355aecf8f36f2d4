import type { Kysely } from 'kysely';

/**
 * The MAIL FROM parameters a relay must be given again (RFC 6152 BODY=8BITMIME, RFC 6531 SMTPUTF8):
 * recorded as the message is accepted, read when it is relayed.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('envelopes')
    .addColumn('body_8bitmime', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('smtputf8', 'boolean', (col) => col.notNull().defaultTo(false))
    .execute();
}
