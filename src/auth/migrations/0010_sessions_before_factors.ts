import { sql, type Kysely } from 'kysely';

/**
 * "Sign out everywhere" finds a person's sessions by what they proved (session_factors, by `email_key`). A reader
 * signed in before migration 0005 proved nothing on record, so no sign-out everywhere could reach that session:
 * such sessions are ended here, once, and their readers sign in again. Nothing else goes with them: drafts and
 * replies belong to the message and recipient, not to the session
 * (docs/decisions.md#the-reader-part-a-sessions-and-headers). The index serves that lookup by address.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('session_factors_email_key').on('session_factors').column('email_key').execute();
  await db
    .deleteFrom('sessions')
    .where('signed_in_at', 'is not', null)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('session_factors').select(sql`1`.as('one')).whereRef('session_id', '=', 'sessions.id'))),
    )
    .execute();
}
