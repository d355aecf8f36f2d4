import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('cluster_configs')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('clusters', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('sealed_messages')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('envelope_id', 'uuid', (c) => c.notNull().unique())
    .addColumn('cid', 'text', (c) => c.notNull())
    .addColumn('wrapped', 'boolean', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('wrapped_key', 'text', (c) => c.notNull())
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('sealed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('sealed_recipients')
    .addColumn('sealed_id', 'uuid', (c) => c.notNull().references('sealed_messages.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('mobile', 'text')
    .addPrimaryKeyConstraint('sealed_recipients_pk', ['sealed_id', 'email_key'])
    .execute();

  await db.schema
    .createTable('sealed_pins')
    .addColumn('sealed_id', 'uuid', (c) => c.notNull().references('sealed_messages.id').onDelete('cascade'))
    .addColumn('cluster', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('next_attempt_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('sealed_pins_pk', ['sealed_id', 'cluster'])
    .execute();
  // The re-pin job's question: which failed pins are due.
  await db.schema
    .createIndex('sealed_pins_due')
    .on('sealed_pins')
    .column('next_attempt_at')
    .where(sql.ref('status'), '=', 'failed')
    .execute();
}
