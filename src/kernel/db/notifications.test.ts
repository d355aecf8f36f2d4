import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openDatabase } from './database.ts';
import { listenOnServer, type NotificationHandlers } from './notifications.ts';
import { createTestDatabase, openTestPglite, openTestPostgres } from '../../../test/support/postgres.ts';

/** What a subscriber was told, in order: `listening`, `lost` or a payload. */
function recorder() {
  const events: string[] = [];
  const handlers: NotificationHandlers = {
    notification: (payload) => events.push(`notified ${payload}`),
    listening: () => events.push('listening'),
    lost: () => events.push('lost'),
  };
  return { events, handlers };
}

async function until(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await sleep(10)) if (check()) return;
  assert.fail(`not within ${timeoutMs} ms: ${what}`);
}

describe('LISTEN on PostgreSQL', () => {
  it('delivers notifications, says when it lost its connection, and listens again by itself', async () => {
    const fresh = await createTestDatabase('kernel_listen');
    const database = await openDatabase({ url: fresh.url, poolSize: 2 });
    const admin = await openTestPostgres();
    const { events, handlers } = recorder();
    const subscription = database.listen('things', handlers);
    try {
      await until(() => events.includes('listening'), 'listening');
      await sql`select pg_notify('things', 'one'), pg_notify('others', 'not ours')`.execute(database.db);
      await until(() => events.includes('notified one'), 'the first notification');

      const name = new URL(fresh.url).pathname.slice(1);
      const { rows } = await sql<{ pid: number }>`
        select pg_terminate_backend(pid) as pid from pg_stat_activity
        where datname = ${name} and application_name = 'sealpost listen things'`.execute(admin.db);
      assert.equal(rows.length, 1, 'one listening connection, named for its channel');
      await until(() => events.filter((event) => event === 'listening').length === 2, 'listening again');
      await sql`select pg_notify('things', 'two')`.execute(database.db);
      await until(() => events.includes('notified two'), 'a notification after the loss');
      assert.deepEqual(events, ['listening', 'notified one', 'lost', 'listening', 'notified two']);

      await subscription.close();
      await sql`select pg_notify('things', 'three')`.execute(database.db);
      await sleep(200);
      assert.equal(events.at(-1), 'notified two', 'nothing after close');
    } finally {
      await subscription.close();
      await admin.close();
      await database.close();
      await fresh.drop();
    }
  });

  it('keeps trying while the server refuses it, and says listening only once LISTEN is in place', async () => {
    const { events, handlers } = recorder();
    // A port nothing listens on: every attempt fails at once.
    const subscription = listenOnServer('postgres://postgres@127.0.0.1:9/none', 'things', handlers, { retryMs: [10] });
    await sleep(200);
    await subscription.close();
    assert.deepEqual(events, [], 'never listening, so never lost');
  });
});

describe('LISTEN on PGlite', () => {
  it('delivers a notification when its transaction commits, before the statement settles', async () => {
    const database = await openTestPglite();
    const { events, handlers } = recorder();
    const subscription = database.listen('things', handlers);
    try {
      await until(() => events.includes('listening'), 'listening');
      await database.db.transaction().execute(async (trx) => {
        await sql`select pg_notify('things', 'in a transaction')`.execute(trx);
        assert.deepEqual(events, ['listening'], 'not before the commit');
      });
      assert.deepEqual(events, ['listening', 'notified in a transaction']);
    } finally {
      await subscription.close();
      await database.close();
    }
  });
});
