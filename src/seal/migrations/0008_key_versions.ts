import { sql, type Kysely } from 'kysely';

/**
 * Master key versions and their rotation (docs/operating.md#the-master-keys).
 * - `sealed_messages.key_version`: the version that wrapped the message key (its `k<version>.` prefix, kept as a
 *   column so that what each version still wraps is counted and found through an index). Every key written before
 *   versions existed is version 1, the single SEAL_MASTER_KEY: the constant default fills them without a rewrite.
 * - `seal_key_versions`: one check value per version ever used, written the first time an instance starts with
 *   it: an instance whose version N is another key than the one that wrapped before refuses to start.
 * - `seal_key_rotations`: each rotation asked for (`sealpost keys rotate`), its progress and its lease: the
 *   instance whose lease runs re-wraps, the others wait, and a restart goes on where the rows stand.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sealed_messages')
    .addColumn('key_version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('sealed_messages')
    .alterColumn('key_version', (c) => c.dropDefault())
    .execute();
  await db.schema
    .createIndex('sealed_messages_key_version')
    .on('sealed_messages')
    .columns(['key_version', 'id'])
    .where(sql.ref('wrapped_key'), 'is not', null)
    .execute();

  await db.schema
    .createTable('seal_key_versions')
    .addColumn('version', 'integer', (c) => c.primaryKey())
    .addColumn('check_value', 'text', (c) => c.notNull())
    .addColumn('first_used_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('seal_key_rotations')
    .addColumn('version', 'integer', (c) => c.primaryKey())
    .addColumn('requested_at', 'timestamptz', (c) => c.notNull())
    .addColumn('finished_at', 'timestamptz')
    .addColumn('rewrapped', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_holder', 'text')
    .addColumn('lease_until', 'timestamptz')
    .execute();
}
