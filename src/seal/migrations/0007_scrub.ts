import { sql, type Kysely } from 'kysely';

/**
 * The scrub (scrub/scrubber.ts): `seal_scrub_due` says when each running message is due to have its copies read
 * again, and is the lease by which one instance claims a message (so instances share the pass and a message is
 * read once per SEAL_SCRUB_INTERVAL); `seal_scrub_copies` lists the copies found damaged or missing, one row per
 * message and cluster, deleted when the copy is found intact again. Both survive restarts.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('seal_scrub_due')
    .addColumn('sealed_id', 'uuid', (c) => c.primaryKey().references('sealed_messages.id').onDelete('cascade'))
    .addColumn('due_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('seal_scrub_due_at').on('seal_scrub_due').column('due_at').execute();

  await db.schema
    .createTable('seal_scrub_copies')
    .addColumn('sealed_id', 'uuid', (c) => c.notNull().references('sealed_messages.id').onDelete('cascade'))
    .addColumn('cluster', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('damaged', 'missing')`))
    .addColumn('detail', 'text', (c) => c.notNull())
    .addColumn('repair', 'text', (c) => c.notNull())
    .addColumn('found_at', 'timestamptz', (c) => c.notNull())
    .addColumn('checked_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('seal_scrub_copies_pk', ['sealed_id', 'cluster'])
    .execute();
}
