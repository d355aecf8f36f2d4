import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { compileOnce } from './compile-once.ts';
import { openDatabase, type Database } from './database.ts';

describe('statements prepared once per connection', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;

  before(async () => {
    testDb = await createTestDatabase('kernel_prepared');
    // One connection: what it has prepared is what pg_prepared_statements shows.
    database = await openDatabase({ url: testDb.url, poolSize: 1 });
  });
  after(async () => {
    await database?.close();
    await testDb?.drop();
  });

  const preparedHere = async () =>
    (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(database.db)).rows.map(
      (row) => row.statement,
    );

  it('prepares a compileOnce statement marked prepare once, and answers every execution of it', async () => {
    const next = compileOnce((n: number) => database.db.selectNoFrom(sql<number>`${n}::int + 1`.as('marked')), -1, {
      prepare: true,
    });
    const plain = compileOnce((n: number) => database.db.selectNoFrom(sql<number>`${n}::int + 2`.as('plain')), -1);
    for (let i = 0; i < 10; i++) {
      assert.equal((await database.db.executeQuery(next(i))).rows[0]!.marked, i + 1);
      assert.equal((await database.db.executeQuery(plain(i))).rows[0]!.plain, i + 2);
    }
    const statements = await preparedHere();
    assert.equal(statements.filter((text) => text.includes('marked')).length, 1);
    assert.equal(statements.filter((text) => text.includes('plain')).length, 0);
  });
});
