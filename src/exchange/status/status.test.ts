import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { exchangeService } from '../service.ts';
import type { EnvelopeStatus, ExchangeTables } from '../tables.ts';
import { archiveStatusHistory } from './archive.ts';
import { eventually, exchangeDb, statusHistory } from '../../../test/support/exchange-delivery.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';

const HOUR_MS = 3600_000;

describe('message status history and its archive', () => {
  let exchange: ServiceUnderTest;
  let db: Kysely<ExchangeTables>;

  /** Status rows for one envelope, `hoursAgo` old, oldest first. */
  async function history(
    statuses: EnvelopeStatus[],
    hoursAgo: number,
    table: 'message_status' | 'message_status_archive' = 'message_status',
  ) {
    const id = randomUUID();
    for (const [i, status] of statuses.entries()) {
      const createdAt = sql<Date>`now() - make_interval(hours => ${hoursAgo}) + make_interval(secs => ${i})`;
      if (table === 'message_status') {
        await db
          .insertInto('message_status')
          .values({ envelope_id: id, status, detail: `step ${i}`, created_at: createdAt })
          .execute();
      } else {
        const { next } = await sql<{
          next: number;
        }>`select nextval(${'exchange.message_status_id_seq'}::regclass) as next`
          .execute(db)
          .then((r) => r.rows[0]!);
        await db
          .insertInto('message_status_archive')
          .values({ id: next, envelope_id: id, status, detail: `step ${i}`, created_at: createdAt })
          .execute();
      }
    }
    return id;
  }
  const rowsIn = async (table: 'message_status' | 'message_status_archive', id: string) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('envelope_id', '=', id)
          .executeTakeFirstOrThrow()
      ).n,
    );

  before(async () => {
    exchange = await startServiceForTest(exchangeService, {
      env: { STATUS_ARCHIVE_AFTER: '720h', STATUS_ARCHIVE_RETENTION: '87600h', STATUS_ARCHIVE_INTERVAL: '100ms' },
    });
    db = exchangeDb(exchange);
  });
  after(() => exchange?.stop());
  beforeEach(async () => {
    await db.deleteFrom('message_status').execute();
    await db.deleteFrom('message_status_archive').execute();
  });

  it('moves rows older than STATUS_ARCHIVE_AFTER to the archive; the endpoint still shows them in order', async () => {
    const old = await history(['accepted', 'delivering', 'delivered'], 721);
    const recent = await history(['accepted', 'delivering', 'delivered'], 719);
    await eventually(
      'the archive job moved the old rows',
      () => rowsIn('message_status_archive', old),
      (n) => n === 3,
    );
    assert.equal(await rowsIn('message_status', old), 0);
    assert.equal(await rowsIn('message_status', recent), 3, 'younger rows stay');
    assert.equal(await rowsIn('message_status_archive', recent), 0);

    const shown = await statusHistory(exchange, old);
    assert.deepEqual(
      shown.map((s) => [s.status, s.detail]),
      [
        ['accepted', 'step 0'],
        ['delivering', 'step 1'],
        ['delivered', 'step 2'],
      ],
    );
  });

  it('deletes archived rows older than STATUS_ARCHIVE_RETENTION and keeps the younger ones', async () => {
    const expired = await history(['accepted', 'failed'], 87601, 'message_status_archive');
    const kept = await history(['accepted', 'delivered'], 87599, 'message_status_archive');
    await eventually(
      'the archive job purged the expired rows',
      () => rowsIn('message_status_archive', expired),
      (n) => n === 0,
    );
    assert.equal(await rowsIn('message_status_archive', kept), 2);
    const response = await fetch(`${exchange.url}/v1/messages/${expired}/status`, {
      headers: { authorization: `Bearer ${exchange.serviceToken}` },
    });
    assert.equal(response.status, 404);
  });

  it('shows a history split between the live table and the archive as one, oldest first', async () => {
    const id = randomUUID();
    await db
      .insertInto('message_status_archive')
      .values({
        id: 1_000_001,
        envelope_id: id,
        status: 'accepted',
        detail: 'a',
        created_at: new Date(Date.now() - 800 * HOUR_MS),
      })
      .execute();
    await db
      .insertInto('message_status')
      .values({ envelope_id: id, status: 'retrying', detail: 'b', created_at: new Date(Date.now() - 10 * HOUR_MS) })
      .execute();
    await db.insertInto('message_status').values({ envelope_id: id, status: 'delivered', detail: 'c' }).execute();
    const shown = await statusHistory(exchange, id);
    assert.deepEqual(
      shown.map((s) => s.detail),
      ['a', 'b', 'c'],
    );
    assert.ok(Date.parse(shown[0]!.at) < Date.parse(shown[1]!.at));
  });

  it('archives in batches, and two instances running the job at once move every row exactly once', async () => {
    // 500 hours old: out of reach of the service's own job (720h), so the two passes below do all the work.
    const ids = await Promise.all(
      Array.from({ length: 10 }, () => history(['accepted', 'delivering', 'delivered'], 500)),
    );
    const batched = { afterMs: 400 * HOUR_MS, retentionMs: 87600 * HOUR_MS, batchSize: 4 };
    const [a, b] = await Promise.all([archiveStatusHistory(db, batched), archiveStatusHistory(db, batched)]);
    assert.equal(a.archived + b.archived, 30, 'each row moved by exactly one of the two');
    const archived = Number(
      (
        await db
          .selectFrom('message_status_archive')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    assert.equal(archived, 30);
    for (const id of ids) assert.equal(await rowsIn('message_status', id), 0);
  });

  it('answers 404 with an error object for an unknown message', async () => {
    const response = await fetch(`${exchange.url}/v1/messages/${randomUUID()}/status`, {
      headers: { authorization: `Bearer ${exchange.serviceToken}` },
    });
    assert.equal(response.status, 404);
    const body = await response.json();
    assert.equal(body.kind, 404);
    assert.equal(body.errorCode, 'not_found');
    assert.match(body.id, /^[0-9a-f-]{36}$/);
  });

  it('answers 401 without a token or with a wrong one, and 400 for an id that is not one', async () => {
    const id = await history(['accepted'], 1);
    const bare = await fetch(`${exchange.url}/v1/messages/${id}/status`);
    assert.equal(bare.status, 401);
    assert.equal((await bare.json()).kind, 401);
    const wrong = await fetch(`${exchange.url}/v1/messages/${id}/status`, {
      headers: { authorization: 'Bearer not-the-token' },
    });
    assert.equal(wrong.status, 401);
    const malformed = await fetch(`${exchange.url}/v1/messages/not-an-id/status`, {
      headers: { authorization: `Bearer ${exchange.serviceToken}` },
    });
    assert.equal(malformed.status, 400);
    assert.equal((await statusHistory(exchange, id, exchange.adminToken)).length, 1);
  });
});
