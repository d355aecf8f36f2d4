import type { Kysely } from 'kysely';

/**
 * Status history that costs each acknowledgement less write-ahead log. Every accepted message writes two
 * history rows, and each row was a heap record plus three index entries: the primary key on `id`,
 * `(envelope_id, id)` and `created_at`. Every reader of the live table looks rows up by envelope, so the
 * primary key becomes `(envelope_id, id)` and the separate index on it goes; the archive job's age index
 * becomes a BRIN index, which suits a column that only grows and which an insert into the table's newest
 * pages does not write to. Each row then costs a heap record and one index entry (bench/RESULTS.md,
 * "A leaner status history"). Rebuilding the key takes the table's lock for as long as it takes to index
 * its rows: on a large history, run the upgrade when the exchange is stopped.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('message_status').dropConstraint('message_status_pkey').execute();
  await db.schema.dropIndex('message_status_envelope').execute();
  await db.schema
    .alterTable('message_status')
    .addPrimaryKeyConstraint('message_status_pkey', ['envelope_id', 'id'])
    .execute();
  await db.schema.dropIndex('message_status_age').execute();
  await db.schema.createIndex('message_status_age').on('message_status').using('brin').column('created_at').execute();
}
