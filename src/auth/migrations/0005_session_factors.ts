import { sql, type Kysely } from 'kysely';

/**
 * What a session has proven, so that one sign-in opens every sealed message those proofs satisfy
 * (docs/decisions.md#sessions-follow-the-person): an email code proves an address, an SMS code proves an
 * (address, mobile number) pair. A grant records a message the session opened with them, so that later
 * requests for it need no look at the seal service. Both go with their session.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // A mobile change proves the current number before the new one: the new one waits here meanwhile.
  await db.schema.alterTable('sessions').addColumn('mobile_change_to', 'text').execute();
  await db.schema
    .createTable('session_factors')
    .addColumn('session_id', 'uuid', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    // '' for an email factor: the primary key cannot hold a null.
    .addColumn('mobile', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('proven_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('session_factors_pkey', ['session_id', 'method', 'email_key', 'mobile'])
    .execute();
  await db.schema
    .createTable('session_grants')
    .addColumn('session_id', 'uuid', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('granted_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('session_grants_pkey', ['session_id', 'message_id'])
    .execute();
}
