import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { AppError } from '../../kernel/errors.ts';
import { createLocalObjectStore, type ObjectStore } from '../../kernel/objects/index.ts';
import { RuleStore } from '../rules/store.ts';
import type { ExchangeTables } from '../tables.ts';
import { type Claim, EnvelopeQueue } from './queue.ts';
import { INTAKE_BUSY_SHARE, type DeliveryWorkers } from './worker.ts';
import {
  eventually,
  intakeOn,
  openExchangeTestDatabase,
  startTestDelivery,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';

const CONCURRENCY = 8;
/** What delivery keeps to while the intake is busy, which it always is while it takes a message in. */
const BUSY_SLOTS = Math.ceil(CONCURRENCY * INTAKE_BUSY_SHARE);
const LEASE_MS = 60_000;

let testDb: ExchangeTestDatabase;
let db: Kysely<ExchangeTables>;
let dir: string;
let objects: ObjectStore;
/** The workers a test started; stopped before the next test and at the end. */
let workers: DeliveryWorkers | undefined;

before(async () => {
  testDb = await openExchangeTestDatabase('exchange_born_claimed', 4);
  db = testDb.db;
  dir = await mkdtemp(join(tmpdir(), 'sealpost-born-claimed-'));
  objects = createLocalObjectStore({ dir });
  await new RuleStore(db).create({
    name: 'relay',
    priority: 1,
    configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
  });
});
beforeEach(async () => {
  await workers?.stop();
  workers = undefined;
  await db.deleteFrom('envelopes').execute();
});
after(async () => {
  await workers?.stop();
  await testDb?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

for (const [way, beside] of [
  ['stored first', undefined],
  ['beside the put (the default)', { graceMs: LEASE_MS }],
] as const)
  describe(`a message taken in while delivery has a free slot is born claimed, its row written ${way}`, () => {
    /**
     * An intake wired to delivery workers over the real queue, as the engine wires them, whose deliveries
     * wait for `release` (when held) and are recorded; claimDue's calls are counted.
     */
    async function startEngine({ held = false } = {}) {
      const intake = intakeOn(db, objects, beside);
      const queue = new EnvelopeQueue(db, LEASE_MS);
      const claimed: Claim[][] = [];
      const claimDue = queue.claimDue.bind(queue);
      queue.claimDue = async (limit: number, mine?: string[]) => {
        const taken = await claimDue(limit, mine);
        claimed.push(taken);
        return taken;
      };
      const delivered = new Map<string, Claim>();
      let release: () => void = () => {};
      const gate = held ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve();
      const started = startTestDelivery({
        queue,
        deliver: async (claim) => {
          await gate;
          delivered.set(claim.id, claim);
        },
        intakeBusy: () => intake.recentlyBusy(),
        busyClaimGapMs: 0,
        concurrency: CONCURRENCY,
        pollIntervalMs: 60_000,
        leaseMs: LEASE_MS,
      });
      workers = started;
      intake.claimAtIntake(() => started.reserve());
      intake.onAccepted((besideRow) => started.wake(besideRow));
      await eventually(
        'the claim at start',
        async () => claimed.length,
        (n) => n === 1,
        5_000,
      );
      const accept = (sender = 'alice@example.com') =>
        intake.accept({ channel: 'smtp', sender, recipients: ['bob@example.net'], payload: Buffer.from('hello\r\n') });
      return { intake, queue, workers: started, claimed, delivered, accept, release: () => release() };
    }

    const row = (id: string) => db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const history = (id: string) =>
      db
        .selectFrom('message_status')
        .select(['status', 'detail'])
        .where('envelope_id', '=', id)
        .orderBy('id')
        .execute();

    it('is written `delivering`, attempt 1, with its `delivering` status row, and is never claimed', async () => {
      const { claimed, delivered, accept, release } = await startEngine({ held: true });
      const before = Date.now();
      const { envelopeId } = await accept();
      const stored = await row(envelopeId);
      assert.equal(stored.status, 'delivering');
      assert.equal(stored.attempts, 1);
      assert.equal(stored.payload_pending, beside !== undefined, 'written beside its put or not');
      const lease = stored.lease_until!.getTime() - before;
      assert.ok(lease >= LEASE_MS - 1_000 && lease <= LEASE_MS + 5_000, `leased for ${lease} ms`);
      assert.deepEqual(await history(envelopeId), [
        { status: 'accepted', detail: '7 bytes over smtp' },
        { status: 'routed', detail: 'by rule "relay" to smtp' },
        { status: 'delivering', detail: 'attempt 1' },
      ]);
      await sleep(200);
      assert.equal(claimed.length, 1, 'no claim beyond the one at start');
      assert.equal(delivered.size, 0, 'its delivery holds its slot (held here)');
      release();
      await eventually('the delivery', async () => delivered.has(envelopeId), Boolean, 5_000);
    });

    it('hands delivery the claim that claimDue would have returned for its row', async () => {
      const { claimed, delivered, accept } = await startEngine();
      const { envelopeId } = await accept();
      await eventually('the delivery', async () => delivered.has(envelopeId), Boolean, 5_000);
      const { previous_status, ...claim } = delivered.get(envelopeId)!;
      assert.equal(previous_status, 'accepted');
      assert.deepEqual(claim, await row(envelopeId));
      assert.equal(claimed.length, 1, 'no claim beyond the one at start');
    });

    it('keeps to the slots delivery keeps while busy; the next message is written `accepted` and claimed', async () => {
      const { claimed, delivered, accept, release } = await startEngine({ held: true });
      const born = await Promise.all(Array.from({ length: BUSY_SLOTS }, () => accept()));
      const next = await accept();
      for (const { envelopeId } of born) assert.equal((await row(envelopeId)).status, 'delivering');
      assert.equal((await row(next.envelopeId)).status, 'accepted', 'no slot was free for it');
      release();
      await eventually(
        'every delivery',
        async () => delivered.size,
        (n) => n === BUSY_SLOTS + 1,
        10_000,
      );
      assert.deepEqual(
        claimed.flat().map((claim) => claim.id),
        [next.envelopeId],
        'only the message written `accepted` was claimed',
      );
      assert.equal(delivered.get(next.envelopeId)!.attempts, 1);
    });

    it('gives the slot back when no row is written for the message', async () => {
      const { workers: started, delivered, accept, release } = await startEngine({ held: true });
      // A sender the database refuses: the statement fails for this message alone.
      for (let i = 0; i < BUSY_SLOTS + 2; i++)
        await assert.rejects(
          accept('bad\u0000@example.com'),
          (error) => error instanceof AppError && error.status === 503,
        );
      const { envelopeId } = await accept();
      assert.equal((await row(envelopeId)).status, 'delivering', 'a slot was still free');
      assert.equal(started.inFlight, 1);
      release();
      await eventually('the delivery', async () => delivered.has(envelopeId), Boolean, 5_000);
    });
  });

describe('a born-claimed envelope whose instance died', () => {
  it('is taken over by the next claim once its lease has run out, as any claim is', async () => {
    const intake = intakeOn(db, objects);
    // The instance dies between the row's commit and its delivery: the slot's start() never runs the claim.
    const expiredLease = new Date(Date.now() - 1_000);
    let started: Claim | undefined;
    intake.claimAtIntake(() => ({
      leaseUntil: expiredLease,
      start(claim) {
        started = claim;
      },
      cancel() {},
    }));
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@example.com',
      recipients: ['bob@example.net'],
      payload: Buffer.from('hello\r\n'),
    });
    assert.equal(started?.id, envelopeId);

    const [claim, ...more] = await new EnvelopeQueue(db, LEASE_MS).claimDue(10);
    assert.equal(more.length, 0);
    assert.equal(claim!.id, envelopeId);
    assert.equal(claim!.previous_status, 'delivering');
    assert.equal(claim!.attempts, 2);
    const statuses = await db
      .selectFrom('message_status')
      .select('detail')
      .where('envelope_id', '=', envelopeId)
      .where('status', '=', 'delivering')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      statuses.map((s) => s.detail),
      ['attempt 1', 'attempt 2, after the lease of the previous worker ran out'],
    );
  });
});

describe('delivery slots reserved for messages being taken in', () => {
  function start(deliver: (claim: Claim) => Promise<void>, intakeBusy = true) {
    workers = startTestDelivery({
      queue: new EnvelopeQueue(db, LEASE_MS),
      deliver,
      intakeBusy: () => intakeBusy,
      concurrency: CONCURRENCY,
      pollIntervalMs: 60_000,
      leaseMs: LEASE_MS,
    });
    return workers;
  }
  const claimFor = (id: string) => ({ id, attempts: 1 }) as Claim;

  it('are as many as the slots free, the busy share while the intake is busy; cancel() frees one', async () => {
    const busy = start(async () => {});
    const held = Array.from({ length: BUSY_SLOTS }, () => busy.reserve()!);
    assert.ok(held.every(Boolean));
    assert.equal(busy.reserve(), undefined, 'the busy share is reserved');
    held[0]!.cancel();
    const again = busy.reserve();
    assert.ok(again, 'a cancelled slot is free again');
    assert.throws(() => held[0]!.cancel(), /settled twice/);
    for (const slot of [...held.slice(1), again]) slot.cancel();
    await busy.stop();

    const quiet = start(async () => {}, false);
    const slots = Array.from({ length: CONCURRENCY + 1 }, () => quiet.reserve());
    assert.equal(slots.filter(Boolean).length, CONCURRENCY, 'every slot while the intake is quiet');
    for (const slot of slots) slot?.cancel();
    await quiet.stop();
    workers = undefined;
  });

  it("run their delivery after the caller's own continuation, and stop() waits for one still open", async () => {
    const delivered: string[] = [];
    const started = start(async (claim) => void delivered.push(claim.id));
    const first = started.reserve()!;
    first.start(claimFor('00000000-0000-4000-8000-000000000001'));
    await Promise.resolve();
    assert.deepEqual(delivered, [], "not within the caller's microtasks");
    assert.equal(started.inFlight, 1, 'but counted in flight at once');
    await eventually(
      'the delivery',
      async () => delivered.length,
      (n) => n === 1,
      5_000,
    );

    const open = started.reserve()!;
    let stopped = false;
    const stopping = started.stop().then(() => (stopped = true));
    assert.equal(started.reserve(), undefined, 'none while stopping');
    await sleep(100);
    assert.equal(stopped, false, 'stop() waits for the open reservation');
    open.start(claimFor('00000000-0000-4000-8000-000000000002'));
    await stopping;
    assert.equal(delivered.length, 2, 'the message whose row was born claimed was delivered before stop() ended');
    workers = undefined;
  });
});
