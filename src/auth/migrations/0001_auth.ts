import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sessions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('remember_me', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('message_id', 'text')
    .addColumn('email', 'text')
    .addColumn('method', 'text')
    .addColumn('signed_in_at', 'timestamptz')
    .addColumn('code_hmac', 'text')
    .addColumn('code_purpose', 'text')
    .addColumn('code_method', 'text')
    .addColumn('code_message_id', 'text')
    .addColumn('code_email', 'text')
    .addColumn('code_destination', 'text')
    .addColumn('code_created_at', 'timestamptz')
    .addColumn('code_failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // The cleanup job's two questions: which sessions passed their end, which idled out.
  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute();
  await db.schema
    .createIndex('sessions_idle')
    .on('sessions')
    .column('last_seen_at')
    .where(sql.ref('remember_me'), '=', false)
    .execute();

  await db.schema
    .createTable('code_sends')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('client', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('code_sends_destination').on('code_sends').columns(['destination', 'sent_at']).execute();
  await db.schema.createIndex('code_sends_client').on('code_sends').columns(['client', 'sent_at']).execute();

  await db.schema
    .createTable('mobile_overrides')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull())
    .addColumn('mobile', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('mobile_overrides_pkey', ['message_id', 'email_key'])
    .execute();
}
