import { sql, type Kysely } from 'kysely';

/**
 * Every change to a session row is announced on the channel `auth_sessions` with the row's token hash as
 * it was before the change, so that each auth instance drops the row from its session cache
 * (docs/decisions.md#session-cache). A trigger rather than a NOTIFY beside each write: no code path, and
 * no operator's statement, can change or delete a session without it. An INSERT needs no announcement:
 * the cache keeps no "no such session". TRUNCATE announces an empty payload: every row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function auth.session_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('auth_sessions', old.token_hash);
      return null;
    end
    $$`.execute(db);
  await sql`
    create trigger session_changed after update or delete on auth.sessions
    for each row execute function auth.session_changed()`.execute(db);
  await sql`
    create function auth.sessions_truncated() returns trigger language plpgsql as $$
    begin
      perform pg_notify('auth_sessions', '');
      return null;
    end
    $$`.execute(db);
  await sql`
    create trigger sessions_truncated after truncate on auth.sessions
    for each statement execute function auth.sessions_truncated()`.execute(db);
}
