import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openDatabase } from './database.ts';
import { createTestDatabase, openTestPostgres } from '../../../test/support/postgres.ts';

describe('a PostgreSQL connection lost while lent out', () => {
  it('fails the next statement instead of crashing, and the pool goes on with a new connection', async () => {
    const fresh = await createTestDatabase('kernel_conn_loss');
    const database = await openDatabase({ url: fresh.url, poolSize: 1 });
    const admin = await openTestPostgres();
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      await database.db.connection().execute(async (connection) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(connection);
        const pid = rows[0]!.pid;
        // Between two statements, as in a transaction or a worker holding its connection: a failover or an
        // operator's pg_terminate_backend ends the session.
        await sql`select pg_terminate_backend(${pid})`.execute(admin.db);
        for (let i = 0; i < 100; i++) {
          const { rows: left } = await sql`select 1 from pg_stat_activity where pid = ${pid}`.execute(admin.db);
          if (left.length === 0) break;
          await sleep(20);
        }
        await sleep(100); // Lets the server's FATAL message and the socket's end reach the client.
        await assert.rejects(sql`select 1`.execute(connection));
      });
      assert.deepEqual(uncaught, [], 'no uncaught error');
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(database.db);
      assert.equal(rows[0]!.one, 1, 'the pool opened a new connection');
    } finally {
      process.off('uncaughtException', onUncaught);
      await admin.close();
      await database.close();
      await fresh.drop();
    }
  });
});
