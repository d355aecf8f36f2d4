import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { openDatabase } from '../../kernel/db/index.ts';
import { AppError } from '../../kernel/errors.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createLocalObjectStore, type ObjectStore } from '../../kernel/objects/index.ts';
import { RuleStore } from '../rules/store.ts';
import type { ExchangeTables } from '../tables.ts';
import { OrphanPayloadSweep } from '../delivery/orphans.ts';
import { TestClock } from '../../../test/support/clock.ts';
import { refuseConnections } from '../../../test/support/db-faults.ts';
import {
  eventually,
  payloadCount,
  openExchangeTestDatabase,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';
import { MessageIntake, payloadKey } from './accept.ts';

/** Rows written beside the put, others may claim a minute after they were written (the service: DELIVERY_LEASE). */
const BESIDE = { graceMs: 60_000 };

/**
 * Each test runs with every payload stored first (INTAKE_BESIDE_PUT_GRACE 0s, INTAKE_OVERLAP_LIMIT 0), with every
 * row written beside its put (the default), with a lone message overlapped and the others beside their put,
 * and with every message overlapped: each way keeps the same promises.
 */
for (const [ways, overlapLimit, beside] of [
  ['every payload stored first', undefined, undefined],
  ['every row beside its put (the default)', undefined, BESIDE],
  ['a lone message overlapped', 1, BESIDE],
  ['every message overlapped', 1000, BESIDE],
] as const) {
  describe(`MessageIntake with concurrent messages, ${ways}`, () => {
    let testDb: ExchangeTestDatabase;
    let db: Kysely<ExchangeTables>;
    let dir: string;
    let objects: ObjectStore;
    let intake: MessageIntake;
    /** The ids onAccepted handed over: rows written beside their put. */
    const besideRows: string[] = [];

    before(async () => {
      testDb = await openExchangeTestDatabase(`exchange_accept_${overlapLimit ?? 0}_${beside ? 'beside' : 'first'}`, 4);
      db = testDb.db;
      dir = await mkdtemp(join(tmpdir(), 'sealpost-accept-'));
      objects = createLocalObjectStore({ dir });
      const rules = new RuleStore(db);
      await rules.create({
        name: 'from carol',
        priority: 1,
        configuration: { params: { channel: 'smtp', sender: 'Carol@Example.com' }, outbound: ['seal'] },
      });
      await rules.create({
        name: 'all mail',
        priority: 2,
        configuration: { params: { channel: 'smtp' }, outbound: ['smtp', 'seal'] },
      });
      intake = new MessageIntake({
        db,
        objects,
        rules,
        logger: createLogger({ level: 'silent' }),
        overlapLimit,
        beside,
      });
      intake.onAccepted((row) => row && besideRows.push(row));
    });
    after(async () => {
      await testDb?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('routes each of many messages accepted at once by its own rule, with its first status row', async () => {
      const senders = Array.from({ length: 40 }, (_, i) =>
        i % 4 === 0 ? 'CAROL@example.com' : `user${i}@example.com`,
      );
      const accepted = await Promise.all(
        senders.map((sender, i) =>
          intake.accept({
            channel: 'smtp',
            sender,
            recipients: [`rcpt${i}@example.net`],
            payload: Buffer.from(`message ${i}`),
          }),
        ),
      );
      for (const [i, result] of accepted.entries()) {
        assert.deepEqual(result.outbound, i % 4 === 0 ? ['seal'] : ['smtp', 'seal']);
        const row = await db
          .selectFrom('envelopes')
          .selectAll()
          .where('id', '=', result.envelopeId)
          .executeTakeFirstOrThrow();
        assert.deepEqual(row.recipients, [`rcpt${i}@example.net`]);
        assert.equal(row.size, result.size);
        assert.equal(row.status, 'accepted');
        const history = await db
          .selectFrom('message_status')
          .select(['status', 'detail'])
          .where('envelope_id', '=', result.envelopeId)
          .orderBy('id')
          .execute();
        assert.deepEqual(history, [
          { status: 'accepted', detail: `${result.size} bytes over smtp` },
          {
            status: 'routed',
            detail: i % 4 === 0 ? 'by rule "from carol" to seal' : 'by rule "all mail" to smtp, seal',
          },
        ]);
        assert.ok(await objects.head(payloadKey(result.envelopeId)));
      }
      // Due for a claim, every one: a row written beside its put is handed to this instance's delivery by
      // its id, being due for others only after its grace.
      const ids = accepted.map((result) => result.envelopeId);
      const handedOver = ids.filter((id) => besideRows.includes(id));
      if (overlapLimit === undefined) assert.deepEqual(handedOver, beside ? ids : [], 'every row beside its put');
      if (overlapLimit === 1000) assert.deepEqual(handedOver, [], 'no row beside its put: every one overlapped');
    });

    it('a message the database refuses fails alone (503, payload deleted); the rest of its batch passes', async () => {
      const before = await payloadCount(objects);
      const results = await Promise.allSettled(
        ['good1@example.com', 'bad\u0000@example.com', 'good2@example.com'].map((sender) =>
          intake.accept({ channel: 'smtp', sender, recipients: ['rcpt@example.net'], payload: Buffer.from('hello') }),
        ),
      );
      assert.equal(results[0]!.status, 'fulfilled');
      assert.equal(results[2]!.status, 'fulfilled');
      assert.equal(results[1]!.status, 'rejected');
      const refused = (results[1] as PromiseRejectedResult).reason;
      assert.ok(refused instanceof AppError && refused.status === 503, String(refused));
      assert.equal(await payloadCount(objects), before + 2);
    });

    it('with no matching rule, accepts nothing for that message, keeping no payload; others are accepted', async () => {
      const before = await payloadCount(objects);
      const [json, smtp] = await Promise.allSettled([
        intake.accept({
          channel: 'json',
          sender: 'app@example.com',
          recipients: ['rcpt@example.net'],
          payload: Buffer.from('json'),
        }),
        intake.accept({
          channel: 'smtp',
          sender: 'app@example.com',
          recipients: ['rcpt@example.net'],
          payload: Buffer.from('smtp'),
        }),
      ]);
      assert.equal(json.status, 'rejected');
      assert.match(
        ((json as PromiseRejectedResult).reason as Error).message,
        /^No delivery rule matches channel json and sender app@example\.com/,
      );
      assert.equal(smtp.status, 'fulfilled');
      assert.equal(await payloadCount(objects), before + 1);
    });

    it("keeps the payload if the write's outcome is unknown (connection lost), for the orphan sweep", async () => {
      // An intake with a pool of its own, so that it meets the outage with no connection at hand.
      const other = await openDatabase({ url: testDb.url, poolSize: 1 });
      const otherDb = other.db.withSchema('exchange') as Kysely<ExchangeTables>;
      const cutOff = new MessageIntake({
        db: otherDb,
        objects,
        rules: new RuleStore(otherDb),
        logger: createLogger({ level: 'silent' }),
        overlapLimit,
        beside,
      });
      const envelopeId = '00000000-0000-4000-8000-00000000dead';
      const restore = await refuseConnections(testDb.url);
      try {
        await assert.rejects(
          cutOff.accept({
            channel: 'smtp',
            sender: 'x@example.com',
            recipients: ['rcpt@example.net'],
            payload: Buffer.from('maybe'),
            envelopeId,
          }),
          (error: unknown) => error instanceof AppError && error.status === 503,
        );
      } finally {
        await restore();
        await other.close();
      }
      assert.ok(await objects.head(payloadKey(envelopeId)), 'payload kept: the row might have been committed');
      assert.equal(
        await db.selectFrom('envelopes').select('id').where('id', '=', envelopeId).executeTakeFirst(),
        undefined,
      );

      const GRACE_MS = 300;
      const clock = new TestClock();
      const sweep = new OrphanPayloadSweep({
        db,
        objects,
        graceMs: GRACE_MS,
        logger: createLogger({ level: 'silent' }),
        now: () => clock.now(),
      });
      assert.equal(await sweep.sweep(), 0, 'first seen without a row: still within its grace');
      assert.ok(await objects.head(payloadKey(envelopeId)));
      clock.advance(GRACE_MS + 50);
      assert.equal(await sweep.sweep(), 1);
      assert.equal(await objects.head(payloadKey(envelopeId)), undefined, 'deleted by the sweep once its grace passed');
    });
  });
}

describe('MessageIntake chooses how to make a message durable by the messages in flight', () => {
  let testDb: ExchangeTestDatabase;
  let db: Kysely<ExchangeTables>;
  let dir: string;
  let objects: ObjectStore;
  /** Puts wait here until released, so that a test can look at the rows while payloads are being stored. */
  const held = new Map<string, { entered: () => void; release: Promise<void> }>();
  /** Puts of these keys fail once they are released. */
  const failing = new Set<string>();
  /** INTAKE_OVERLAP_LIMIT 1: a lone message's writes overlap. */
  let limitOne: MessageIntake;
  let storedFirst: MessageIntake;
  /** Rows beside the put (the default), and the same with a grace of 100 ms. */
  let beside: MessageIntake;
  let besideShortGrace: MessageIntake;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_accept_ways', 4);
    db = testDb.db;
    dir = await mkdtemp(join(tmpdir(), 'sealpost-accept-ways-'));
    const store = createLocalObjectStore({ dir });
    objects = {
      ...store,
      async put(key, body, options) {
        const hold = held.get(key);
        if (hold) {
          hold.entered();
          await hold.release;
        }
        if (failing.has(key)) throw new Error('the disk is full');
        return store.put(key, body, options);
      },
    };
    const rules = new RuleStore(db);
    await rules.create({
      name: 'all mail',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    });
    const logger = createLogger({ level: 'silent' });
    limitOne = new MessageIntake({ db, objects, rules, logger, overlapLimit: 1 });
    storedFirst = new MessageIntake({ db, objects, rules, logger });
    beside = new MessageIntake({ db, objects, rules, logger, beside: BESIDE });
    besideShortGrace = new MessageIntake({ db, objects, rules, logger, beside: { graceMs: 100 } });
  });
  after(async () => {
    await testDb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Starts accepting a message whose put waits until `release` is called; resolves once the put started. */
  async function acceptHeld(envelopeId: string, by: MessageIntake) {
    let release!: () => void;
    let entered!: () => void;
    const started = new Promise<void>((resolve) => (entered = resolve));
    held.set(payloadKey(envelopeId), { entered, release: new Promise<void>((resolve) => (release = resolve)) });
    const accepted = by.accept({
      channel: 'smtp',
      sender: 'app@example.com',
      recipients: ['rcpt@example.net'],
      payload: Buffer.from(`message ${envelopeId}`),
      envelopeId,
    });
    await started;
    return { accepted, release };
  }
  const statusOf = async (id: string) =>
    (await db.selectFrom('envelopes').select('status').where('id', '=', id).executeTakeFirst())?.status;

  /** A message stored first: no row while its put is held, then its row written `accepted`. */
  async function expectStoredFirst(id: string, message: Awaited<ReturnType<typeof acceptHeld>>, which: string) {
    // Given the time its row would take to appear if it were written beside the put.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(await statusOf(id), undefined, `no row for ${which} while its payload is stored`);
    message.release();
    await message.accepted;
    assert.equal(await statusOf(id), 'accepted', 'written accepted once its payload was durable');
  }

  it("stored first, writes even a lone message's row only once its payload is durable", async () => {
    const lone = '00000000-0000-4000-8000-0000000000b1';
    await expectStoredFirst(lone, await acceptHeld(lone, storedFirst), 'the lone message');
  });

  const rowOf = (id: string) =>
    db
      .selectFrom('envelopes')
      .select(['status', 'payload_pending', sql<number>`extract(epoch from next_attempt_at - now())`.as('dueIn')])
      .where('id', '=', id)
      .executeTakeFirst();
  const historyOf = async (id: string) =>
    (await db.selectFrom('message_status').select('status').where('envelope_id', '=', id).orderBy('id').execute()).map(
      (row) => row.status,
    );

  it('beside the put, writes the row `accepted` while the payload is stored, ours once durable', async () => {
    const id = '00000000-0000-4000-8000-0000000000c1';
    const handedOver: Array<string | undefined> = [];
    beside.onAccepted((row) => handedOver.push(row));
    const message = await acceptHeld(id, beside);
    const pending = await eventually('the row, written beside the put', () => rowOf(id), Boolean);
    assert.equal(pending!.status, 'accepted');
    assert.equal(pending!.payload_pending, true);
    assert.ok(pending!.dueIn > 55, `due only after the grace (in ${pending!.dueIn} s), so nobody claims it yet`);
    assert.deepEqual(await historyOf(id), ['accepted', 'routed']);
    assert.deepEqual(handedOver, [], 'not handed to delivery while its put runs');
    message.release();
    await message.accepted;
    assert.deepEqual(handedOver, [id], "handed to this instance's delivery, by its id, once durable");
    const accepted = await rowOf(id);
    assert.ok(accepted!.dueIn > 55, 'still due for other instances only after the grace: no second statement');
  });

  it('beside the put, removes the row and its status rows again when the put fails (503)', async () => {
    const id = '00000000-0000-4000-8000-0000000000c2';
    failing.add(payloadKey(id));
    const message = await acceptHeld(id, beside);
    await eventually('the row, written beside the put', () => rowOf(id), Boolean);
    message.release();
    await assert.rejects(message.accepted, (error) => error instanceof AppError && error.status === 503);
    assert.equal(await rowOf(id), undefined);
    assert.deepEqual(await historyOf(id), []);
  });

  it('beside the put, refuses a message whose put outlasted the grace (503), keeping no row, no payload', async () => {
    const id = '00000000-0000-4000-8000-0000000000c3';
    const message = await acceptHeld(id, besideShortGrace);
    await eventually('the row, written beside the put', () => rowOf(id), Boolean);
    // Past the grace another instance may have claimed the row, found no payload and dropped it.
    await new Promise((resolve) => setTimeout(resolve, 250));
    message.release();
    await assert.rejects(message.accepted, (error) => error instanceof AppError && error.status === 503);
    assert.equal(await rowOf(id), undefined);
    assert.deepEqual(await historyOf(id), []);
    assert.equal(await objects.head(payloadKey(id)), undefined);
  });

  it("at limit 1 writes a lone message's row beside its put, a second one's once its payload is durable", async () => {
    const lone = '00000000-0000-4000-8000-0000000000a1';
    const second = '00000000-0000-4000-8000-0000000000a2';
    const first = await acceptHeld(lone, limitOne);
    await eventually(
      "the lone message's row, written beside its put",
      () => statusOf(lone),
      (status) => status === 'storing',
    );
    await expectStoredFirst(second, await acceptHeld(second, limitOne), 'the second message');
    assert.equal(await statusOf(lone), 'storing', 'the first one still waits for its payload');
    first.release();
    await first.accepted;
    assert.equal(await statusOf(lone), 'accepted');
    for (const id of [lone, second]) {
      const history = await db
        .selectFrom('message_status')
        .select('status')
        .where('envelope_id', '=', id)
        .orderBy('id')
        .execute();
      assert.deepEqual(
        history.map((row) => row.status),
        ['accepted', 'routed'],
        `${id}: its first status rows`,
      );
    }
  });
});
