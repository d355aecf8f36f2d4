import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { ExchangeTables } from '../tables.ts';
import { EnvelopeQueue } from './queue.ts';
import { INTAKE_BUSY_SHARE, type DeliveryWorkers } from './worker.ts';
import {
  enqueueEnvelopes,
  openExchangeTestDatabase,
  startTestDelivery,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';

/** Slots while the intake is busy: INTAKE_BUSY_SHARE of 32. */
const CONCURRENCY = 32;
const BUSY_SLOTS = Math.ceil(CONCURRENCY * INTAKE_BUSY_SHARE);
/** A gap far longer than the database takes, so that "not claimed yet" means the gap held the claim back. */
const GAP_MS = 1_500;

describe('delivery gathers its claims while the intake is busy', () => {
  let testDb: ExchangeTestDatabase;
  let db: Kysely<ExchangeTables>;
  let workers: DeliveryWorkers | undefined;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_busy_claims', 4);
    db = testDb.db;
  });
  after(async () => {
    await workers?.stop();
    await testDb?.close();
  });

  /**
   * Workers over a real queue that record each claim (when, how many asked for, how many taken) and
   * each envelope delivered; the first claim, at start, finds the queue empty.
   */
  async function startRecording(intakeBusy: boolean) {
    await workers?.stop();
    await db.deleteFrom('envelopes').execute();
    const queue = new EnvelopeQueue(db, 60_000);
    const claims: { at: number; asked: number; taken: number }[] = [];
    const claimDue = queue.claimDue.bind(queue);
    queue.claimDue = async (limit: number) => {
      const at = performance.now();
      const taken = await claimDue(limit);
      claims.push({ at, asked: limit, taken: taken.length });
      return taken;
    };
    const delivered = new Set<string>();
    workers = startTestDelivery({
      queue,
      deliver: async (claim) => void delivered.add(claim.id),
      intakeBusy: () => intakeBusy,
      busyClaimGapMs: GAP_MS,
      concurrency: CONCURRENCY,
      pollIntervalMs: 60_000,
      leaseMs: 60_000,
    });
    for (let i = 0; i < 100 && claims.length === 0; i++) await sleep(10);
    assert.equal(claims.length, 1, 'the claim at start');
    return { claims, delivered, workers };
  }

  /** What the intake does for each message it acknowledges: the row, then wake(). */
  async function accept(workers: DeliveryWorkers, count: number): Promise<string[]> {
    const ids = await enqueueEnvelopes(db, count);
    for (let i = 0; i < count; i++) workers.wake();
    return ids;
  }

  async function until(done: () => boolean, ms: number) {
    const deadline = performance.now() + ms;
    while (!done() && performance.now() < deadline) await sleep(10);
  }

  it('holds a few accepted messages until the gap has passed, then claims them in one statement', async () => {
    const { claims, delivered, workers } = await startRecording(true);
    const ids = await accept(workers, 3);
    await sleep(GAP_MS / 3);
    assert.equal(claims.length, 1, 'no claim before the gap has passed');
    assert.equal(delivered.size, 0);
    await until(() => ids.every((id) => delivered.has(id)), 10_000);
    assert.deepEqual(
      ids.filter((id) => !delivered.has(id)),
      [],
    );
    assert.equal(claims.length, 2, 'one claim for the three');
    assert.deepEqual({ asked: claims[1]!.asked, taken: claims[1]!.taken }, { asked: BUSY_SLOTS, taken: 3 });
    assert.ok(claims[1]!.at - claims[0]!.at >= GAP_MS - 5, `claimed ${claims[1]!.at - claims[0]!.at} ms after`);
  });

  it('claims at once when the accepted messages fill the slots it keeps while busy', async () => {
    const { claims, delivered, workers } = await startRecording(true);
    const ids = await accept(workers, BUSY_SLOTS);
    await until(() => ids.every((id) => delivered.has(id)), GAP_MS / 2);
    assert.equal(delivered.size, BUSY_SLOTS, 'delivered well before the gap');
    // One claim took them all (a full claim is then followed by one more, which finds nothing).
    assert.deepEqual({ asked: claims[1]!.asked, taken: claims[1]!.taken }, { asked: BUSY_SLOTS, taken: BUSY_SLOTS });
  });

  it('drains a backlog without gathering: a full claim is followed by the next one as slots free', async () => {
    const { claims, delivered, workers } = await startRecording(true);
    // Three times what the slots hold, due at once (as after a relay came back): one wake, as for
    // mail taken elsewhere that this instance finds by itself.
    const ids = await enqueueEnvelopes(db, BUSY_SLOTS * 3);
    workers.wake();
    await until(() => ids.every((id) => delivered.has(id)), GAP_MS * 2);
    assert.equal(delivered.size, ids.length);
    const taking = claims.slice(1).filter(({ taken }) => taken > 0);
    assert.ok(taking[0]!.at - claims[0]!.at >= GAP_MS - 5, 'the first claim waited for the gap (one wake only)');
    assert.ok(
      taking.at(-1)!.at - taking[0]!.at < GAP_MS / 2,
      `the rest without waiting again: ${taking.map(({ at, taken }) => `${taken} at ${Math.round(at)}`).join(', ')}`,
    );
    assert.ok(
      taking.slice(0, -1).every(({ asked, taken }) => taken === asked),
      'every claim but the last filled the slots',
    );
  });

  it('does not gather while the intake is quiet: one message is claimed as soon as it is accepted', async () => {
    const { claims, delivered, workers } = await startRecording(false);
    const [id] = await accept(workers, 1);
    await until(() => delivered.has(id!), GAP_MS / 2);
    assert.ok(delivered.has(id!), 'delivered well before the gap');
    assert.deepEqual(
      claims.slice(1).map(({ asked, taken }) => ({ asked, taken })),
      [{ asked: CONCURRENCY, taken: 1 }],
    );
  });
});
