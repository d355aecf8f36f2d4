import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
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
  payloadCount,
  openExchangeTestDatabase,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';
import { payloadKey } from '../handoff.ts';
import { MessageIntake } from './accept.ts';

describe('MessageIntake with concurrent messages', () => {
  let testDb: ExchangeTestDatabase;
  let db: Kysely<ExchangeTables>;
  let dir: string;
  let objects: ObjectStore;
  let intake: MessageIntake;
  /** How many times onAccepted told delivery that mail is due. */
  let handedOver = 0;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_accept', 4);
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
    });
    intake.onAccepted(() => handedOver++);
  });
  after(async () => {
    await testDb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('routes each of many messages accepted at once by its own rule, with its first status row', async () => {
    const senders = Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? 'CAROL@example.com' : `user${i}@example.com`));
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
    // Due for a claim, every one, and this instance's delivery told so.
    assert.equal(handedOver, senders.length);
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

describe('MessageIntake stores the payload first, then writes its row', () => {
  let testDb: ExchangeTestDatabase;
  let db: Kysely<ExchangeTables>;
  let dir: string;
  let objects: ObjectStore;
  /** Puts wait here until released, so that a test can look at the rows while payloads are being stored. */
  const held = new Map<string, { entered: () => void; release: Promise<void> }>();
  /** Puts of these keys fail once they are released. */
  const failing = new Set<string>();
  let intake: MessageIntake;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_accept_order', 4);
    db = testDb.db;
    dir = await mkdtemp(join(tmpdir(), 'sealpost-accept-order-'));
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
    intake = new MessageIntake({ db, objects, rules, logger: createLogger({ level: 'silent' }) });
  });
  after(async () => {
    await testDb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Starts accepting a message whose put waits until `release` is called; resolves once the put started. */
  async function acceptHeld(envelopeId: string) {
    let release!: () => void;
    let entered!: () => void;
    const started = new Promise<void>((resolve) => (entered = resolve));
    held.set(payloadKey(envelopeId), { entered, release: new Promise<void>((resolve) => (release = resolve)) });
    const accepted = intake.accept({
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
  const historyOf = async (id: string) =>
    (await db.selectFrom('message_status').select('status').where('envelope_id', '=', id).orderBy('id').execute()).map(
      (row) => row.status,
    );

  it("writes a message's row only once its payload is durable, `accepted` with its first status rows", async () => {
    const id = '00000000-0000-4000-8000-0000000000b1';
    const message = await acceptHeld(id);
    // Given the time a row written while the payload is stored would take to appear.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(await statusOf(id), undefined, 'no row while its payload is stored');
    message.release();
    await message.accepted;
    assert.equal(await statusOf(id), 'accepted', 'written accepted once its payload was durable');
    assert.deepEqual(await historyOf(id), ['accepted', 'routed']);
  });

  it('writes no row and keeps no payload when the put fails (503)', async () => {
    const id = '00000000-0000-4000-8000-0000000000b2';
    failing.add(payloadKey(id));
    const message = await acceptHeld(id);
    message.release();
    await assert.rejects(message.accepted, (error) => error instanceof AppError && error.status === 503);
    assert.equal(await statusOf(id), undefined);
    assert.deepEqual(await historyOf(id), []);
    assert.equal(await objects.head(payloadKey(id)), undefined);
  });
});
