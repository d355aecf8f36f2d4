import { sql, type Kysely } from 'kysely';

/**
 * Where a recipient's mobile number comes from when the sender gave none (docs/design.md#contacts):
 * `contacts`, the operator's directory (POST /v1/admin/contacts), and `confirmed_mobiles`, the number a
 * recipient proved to the auth service (a mobile change, or a number added after an email sign-in), which
 * applies to their later messages. Both are keyed by the lower-cased normalised address, as sealed_recipients.
 * `sealed_recipients.mobile_source` records which source a sealed message used for each recipient.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('contacts')
    .addColumn('email_key', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('mobile', 'text', (c) => c.notNull())
    .addColumn('language', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('confirmed_mobiles')
    .addColumn('email_key', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('mobile', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'timestamptz', (c) => c.notNull())
    // The message the recipient was reading when they proved it (for the operator; no foreign key: a
    // record may be deleted, the number stays the recipient's).
    .addColumn('confirmed_on', 'uuid')
    // The number it replaced (a mobile change): a sender's header still naming that one gives way to it.
    .addColumn('replaces', 'text')
    .execute();
  await db.schema
    .alterTable('sealed_recipients')
    .addColumn('mobile_source', 'text', (c) => c.check(sql`mobile_source in ('header', 'confirmed', 'directory')`))
    .execute();
}
