import { sql, type Kysely } from 'kysely';

/**
 * Reply drafts and their attachment files (docs/design.md#replying); the files' bytes live in the object
 * store.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('drafts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('html', 'text')
    .addColumn('bcc', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('sending_since', 'timestamptz')
    .addColumn('sent_at', 'timestamptz')
    .execute();
  // One open draft per sealed message and recipient; a sent one may linger until its files are gone.
  await db.schema
    .createIndex('drafts_open')
    .on('drafts')
    .columns(['message_id', 'email_key'])
    .unique()
    .where(sql.ref('sent_at'), 'is', null)
    .execute();
  // The watcher's question: which drafts were last changed before the retention cut-off, or were sent.
  await db.schema.createIndex('drafts_updated_at').on('drafts').column('updated_at').execute();

  await db.schema
    .createTable('draft_files')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('draft_id', 'uuid', (c) => c.notNull().references('drafts.id').onDelete('cascade'))
    .addColumn('object_key', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('detected_type', 'text')
    .addColumn('scanned', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('draft_files_draft').on('draft_files').column('draft_id').execute();
}
