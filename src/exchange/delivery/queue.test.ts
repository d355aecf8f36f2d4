import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import type { ExchangeTables } from '../tables.ts';
import { EnvelopeQueue } from './queue.ts';
import { TestClock } from '../../../test/support/clock.ts';
import {
  enqueueEnvelopes,
  openExchangeTestDatabase,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';

describe('the delivery queue', () => {
  let testDb: ExchangeTestDatabase;
  let db: Kysely<ExchangeTables>;

  const enqueue = (count: number) => enqueueEnvelopes(db, count);
  /** The status rows written after the claim. */
  const history = (id: string) =>
    db
      .selectFrom('message_status')
      .select(['status', 'detail'])
      .where('envelope_id', '=', id)
      .where('status', 'not in', ['accepted', 'routed', 'delivering'])
      .orderBy('id')
      .execute();

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_queue', 12);
    db = testDb.db;
  });
  after(async () => {
    await testDb?.close();
  });
  beforeEach(async () => {
    await db.deleteFrom('envelopes').execute();
  });

  it('hands each due envelope to exactly one of many concurrent claimers', async () => {
    const ids = await enqueue(300);
    const queue = new EnvelopeQueue(db, 60_000);
    const claimed: string[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (;;) {
          const batch = await queue.claimDue(7);
          if (batch.length === 0) return;
          claimed.push(...batch.map((c) => c.id));
        }
      }),
    );
    assert.equal(claimed.length, 300, 'no envelope claimed twice');
    assert.deepEqual(new Set(claimed), new Set(ids));
    const history = await db
      .selectFrom('message_status')
      .select(['envelope_id', 'detail'])
      .where('status', '=', 'delivering')
      .execute();
    assert.equal(history.filter((h) => ids.includes(h.envelope_id)).length, 300, 'one delivering row per claim');
    assert.ok(history.every((h) => h.detail === 'attempt 1'));
  });

  it('takes an envelope over once its lease ran out, and the worker that lost it can change nothing', async () => {
    const [id] = await enqueue(1);
    const clock = new TestClock();
    const queue = new EnvelopeQueue(db, 500, clock);
    const [stale] = await queue.claimDue(10);
    assert.equal(stale!.id, id);
    assert.equal(stale!.attempts, 1);
    assert.deepEqual(await queue.claimDue(10), [], 'not while the lease holds');

    clock.advance(700);
    const [fresh] = await queue.claimDue(10);
    assert.equal(fresh!.id, id);
    assert.equal(fresh!.previous_status, 'delivering');
    assert.equal(fresh!.attempts, 2);

    assert.equal(await queue.markDelivered(stale!, 'late', null), false);
    assert.equal(await queue.markStrategyDone(stale!, 'smtp', null), false);
    assert.deepEqual(await queue.renewLeases([stale!]), [id], 'the old owner learns it lost the lease');
    assert.equal(await queue.markDelivered(fresh!, 'done', null), true);
    assert.deepEqual(
      await history(id!),
      [{ status: 'delivered', detail: 'done' }],
      'one delivered row, the new owner’s',
    );
  });

  it('removes a delivered row with its mark, and keeps one with refused recipients for the bounce', async () => {
    const [plain, refused, lost] = await enqueue(3);
    const queue = new EnvelopeQueue(db, 60_000);
    const claims = new Map((await queue.claimDue(3)).map((claim) => [claim.id, claim]));
    const report = {
      reason: 'Some recipients were refused.',
      recipients: [{ recipient: 'x@rcpt.example', status: '5.1.1' }],
    };
    await db.updateTable('envelopes').set({ attempts: 9 }).where('id', '=', lost!).execute();

    // Marked together, so that one statement does all three.
    const marked = await Promise.all([
      queue.markDelivered(claims.get(plain!)!, 'relayed', null),
      queue.markDelivered(claims.get(refused!)!, 'relayed; refused: x@rcpt.example', report),
      queue.markDelivered(claims.get(lost!)!, 'relayed too late', null),
    ]);

    assert.deepEqual(marked, [true, true, false]);
    const rows = await db.selectFrom('envelopes').select(['id', 'status', 'bounce_report']).orderBy('id').execute();
    assert.deepEqual(
      rows.map(({ id, status }) => [id, status]),
      [
        [refused, 'delivered'],
        [lost, 'delivering'],
      ].sort(),
      'the plain envelope’s row is gone; the one whose lease was lost is untouched',
    );
    assert.deepEqual(rows.find((row) => row.id === refused)!.bounce_report, report);
    assert.deepEqual(await history(plain!), [{ status: 'delivered', detail: 'relayed' }], 'its history stays');
    assert.deepEqual(await history(refused!), [{ status: 'delivered', detail: 'relayed; refused: x@rcpt.example' }]);
    assert.deepEqual(await history(lost!), []);
  });

  it('renews the leases of deliveries in progress', async () => {
    await enqueue(1);
    const clock = new TestClock();
    const queue = new EnvelopeQueue(db, 1000, clock);
    const [claim] = await queue.claimDue(1);
    for (let i = 0; i < 4; i++) {
      clock.advance(300);
      assert.deepEqual(await queue.renewLeases([claim!]), []);
    }
    assert.deepEqual(await queue.claimDue(1), [], 'still owned after twice the lease');
  });

  it('leaves a retrying envelope alone until its next attempt is due', async () => {
    await enqueue(1);
    const clock = new TestClock();
    const queue = new EnvelopeQueue(db, 60_000, clock);
    const [claim] = await queue.claimDue(1);
    assert.equal(await queue.markRetrying(claim!, 500, 'busy', 'retry 1'), true);
    assert.deepEqual(await queue.claimDue(1), []);
    clock.advance(700);
    const [again] = await queue.claimDue(1);
    assert.equal(again!.attempts, 2);
    assert.equal(again!.last_error, 'busy');
  });
});
