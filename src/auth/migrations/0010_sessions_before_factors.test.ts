import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { migrateSchema, openDatabase, type Database } from '../../kernel/db/index.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { migrations } from './index.ts';

/**
 * Upgrading over sessions signed in before proofs were recorded: those are ended, so that "sign out everywhere"
 * has no session it cannot reach; every other session stays.
 */
describe('auth migration 0010: sessions signed in before session_factors', () => {
  let fresh: { url: string; drop(): Promise<void> };
  let database: Database;
  let db: Kysely<any>;

  before(async () => {
    fresh = await createTestDatabase('auth_0010');
    database = await openDatabase({ url: fresh.url, poolSize: 2 });
    db = database.db.withSchema('auth');
  });
  after(async () => {
    await database?.close();
    await fresh?.drop();
  });

  it('ends the signed-in sessions with no proof on record and keeps the rest', async () => {
    const before0010 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0010'));
    await migrateSchema(database.db, { schema: 'auth', migrations: before0010 });
    const now = new Date();
    const later = new Date(now.getTime() + 3_600_000);
    const session = async (name: string, signedIn: boolean) => {
      const row = await db
        .insertInto('sessions')
        .values({
          token_hash: name,
          created_at: now,
          last_seen_at: now,
          expires_at: later,
          ...(signedIn ? { message_id: 'm1', email: 'alice@example.com', method: 'sms', signed_in_at: now } : {}),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id as string;
    };
    await session('legacy', true);
    const proven = await session('proven', true);
    await db
      .insertInto('session_factors')
      .values({ session_id: proven, method: 'sms', email_key: 'alice@example.com', email: 'alice@example.com' })
      .execute();
    await session('anonymous', false);

    assert.deepEqual(await migrateSchema(database.db, { schema: 'auth', migrations }), [
      '0010_sessions_before_factors',
    ]);
    const left = await db.selectFrom('sessions').select('token_hash').orderBy('token_hash').execute();
    assert.deepEqual(
      left.map((row) => row.token_hash),
      ['anonymous', 'proven'],
    );
    const indexes = await sql<{ indexname: string }>`
      select indexname from pg_indexes where schemaname = 'auth' and tablename = 'session_factors'`.execute(
      database.db,
    );
    assert.ok(indexes.rows.some((row) => row.indexname === 'session_factors_email_key'));
  });
});
