import type { Kysely } from 'kysely';

/**
 * Refused code requests (unknown recipient, other method, number not on record), counted per client and
 * per message so that probing who reads a message, and with which number, is rate-limited like sending.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('code_refusals')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('client', 'text', (c) => c.notNull())
    .addColumn('refused_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('code_refusals_message')
    .on('code_refusals')
    .columns(['message_id', 'refused_at'])
    .execute();
  await db.schema.createIndex('code_refusals_client').on('code_refusals').columns(['client', 'refused_at']).execute();
}
