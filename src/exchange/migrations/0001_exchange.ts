import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rules')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('priority', 'integer', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('sender', 'text')
    .addColumn('outbound', sql`text[]`, (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('rules_execution_order').on('rules').columns(['priority', 'created_at', 'id']).execute();

  await db.schema
    .createTable('envelopes')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('recipients', sql`text[]`, (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('payload_key', 'text', (c) => c.notNull())
    .addColumn('rule_id', 'uuid')
    .addColumn('outbound', sql`text[]`, (c) => c.notNull())
    .addColumn('done_outbound', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('lease_until', 'timestamptz')
    .addColumn('last_error', 'text')
    .addColumn('is_bounce', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // The queue's two questions: which waiting envelopes are due, and whose lease has run out.
  // (Kysely builders rather than raw SQL: only they get the service's schema applied.)
  await db.schema
    .createIndex('envelopes_due')
    .on('envelopes')
    .column('next_attempt_at')
    .where(sql.ref('status'), 'in', ['accepted', 'retrying'])
    .execute();
  await db.schema
    .createIndex('envelopes_lease')
    .on('envelopes')
    .column('lease_until')
    .where(sql.ref('status'), '=', 'delivering')
    .execute();

  await db.schema
    .createTable('message_status')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('envelope_id', 'uuid', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('message_status_envelope').on('message_status').columns(['envelope_id', 'id']).execute();
  await db.schema.createIndex('message_status_age').on('message_status').column('created_at').execute();

  await db.schema
    .createTable('message_status_archive')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('envelope_id', 'uuid', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('archived_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('message_status_archive_envelope')
    .on('message_status_archive')
    .columns(['envelope_id', 'id'])
    .execute();
  await db.schema.createIndex('message_status_archive_age').on('message_status_archive').column('created_at').execute();
}
