import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { createLogger } from '../../kernel/logger.ts';
import type { ExchangeTables } from '../tables.ts';
import { EnvelopeQueue, type Claim } from './queue.ts';
import {
  enqueueEnvelopes,
  openExchangeTestDatabase,
  startTestDelivery,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';

/** A short lease, so that renewals (every third of it) run several times while a delivery finishes. */
const LEASE_MS = 300;

describe('lease-lost warnings of the delivery workers', () => {
  let testDb: ExchangeTestDatabase;
  let db: Kysely<ExchangeTables>;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_lease_warn', 6);
    db = testDb.db;
  });
  after(async () => {
    await testDb?.close();
  });

  const enqueue = (count: number) => enqueueEnvelopes(db, count);

  /** Runs workers over `count` envelopes with `deliver`, and returns the lease-lost warnings they logged. */
  async function run(
    count: number,
    deliver: (claim: Claim, queue: EnvelopeQueue) => Promise<void>,
  ): Promise<{ envelopeId?: string }[]> {
    const ids = await enqueue(count);
    const lines: { msg: string; envelopeId?: string }[] = [];
    const logger = createLogger({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const queue = new EnvelopeQueue(db, LEASE_MS);
    const done = new Set<string>();
    const workers = startTestDelivery({
      queue,
      deliver: async (claim) => {
        await deliver(claim, queue);
        done.add(claim.id);
      },
      concurrency: 4,
      pollIntervalMs: 20,
      leaseMs: LEASE_MS,
      logger,
    });
    for (let i = 0; i < 500 && !ids.every((id) => done.has(id)); i++) await sleep(20);
    await workers.stop();
    assert.equal(ids.filter((id) => done.has(id)).length, count, 'every envelope was delivered');
    return lines.filter((line) => line.msg.startsWith('lease lost'));
  }

  it('warns of nothing when each worker finishes its own envelopes, however the renewal falls', async () => {
    // The outcome is written, then the worker is still busy (finishing, bouncing) while renewals run:
    // first with the row in `delivered`, then with the row removed.
    const warnings = await run(12, async (claim, queue) => {
      assert.equal(await queue.markDelivered(claim, 'delivered by the test', null), true);
      await sleep(LEASE_MS / 2);
      await db.deleteFrom('envelopes').where('id', '=', claim.id).execute();
      await sleep(LEASE_MS / 2);
    });
    assert.deepEqual(warnings, []);
  });

  it('warns once when another worker really takes the envelope over', async () => {
    let takenOver: string | undefined;
    const warnings = await run(1, async (claim) => {
      // What another worker's claim does to the row: one attempt more, its own lease.
      await db
        .updateTable('envelopes')
        .set((eb) => ({ attempts: eb('attempts', '+', 1), lease_until: new Date(Date.now() + 60_000) }))
        .where('id', '=', claim.id)
        .execute();
      takenOver = claim.id;
      // Long enough for several renewal passes, each of which sees the takeover.
      await sleep(LEASE_MS + LEASE_MS / 3);
    });
    assert.equal(warnings.length, 1, 'one warning, not one per renewal pass');
    assert.equal(warnings[0]!.envelopeId, takenOver);
  });
});
