import { sql, type Kysely } from 'kysely';

/**
 * A sealed message can end (docs/specification.md#end-dates). `expires_at` is its end date, if any;
 * `ended_at`/`end_reason`/`end_note` record an end, final once written, and `wrapped_key` becomes null in the
 * same statement (the key is destroyed: crypto-shredding). A withdrawal for one recipient is that recipient's
 * `withdrawn_at`. The clusters are asked to unpin from `seal_end_work`, one row per cluster, at least once.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sealed_messages')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('ended_at', 'timestamptz')
    .addColumn('end_reason', 'text', (c) => c.check(sql`end_reason in ('expired', 'withdrawn')`))
    .addColumn('end_note', 'text')
    .execute();
  await db.schema
    .alterTable('sealed_messages')
    .alterColumn('wrapped_key', (c) => c.dropNotNull())
    .execute();
  // The expiry pass's question (which messages are due) only ever looks at the messages still running.
  await db.schema
    .createIndex('sealed_messages_end_due')
    .on('sealed_messages')
    .column('expires_at')
    .where(sql.ref('ended_at'), 'is', null)
    .execute();

  await db.schema
    .alterTable('sealed_recipients')
    .addColumn('withdrawn_at', 'timestamptz')
    .addColumn('withdraw_note', 'text')
    .execute();

  await db.schema
    .createTable('seal_end_work')
    .addColumn('sealed_id', 'uuid', (c) => c.notNull().references('sealed_messages.id').onDelete('cascade'))
    .addColumn('cluster', 'text', (c) => c.notNull())
    .addColumn('cid', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('seal_end_work_pk', ['sealed_id', 'cluster'])
    .execute();
  await db.schema.createIndex('seal_end_work_due').on('seal_end_work').column('next_attempt_at').execute();
}
