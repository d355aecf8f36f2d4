import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { openDatabase } from '../../kernel/db/index.ts';
import { AppError } from '../../kernel/errors.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createLocalObjectStore, type ObjectStore } from '../../kernel/objects/index.ts';
import { refuseConnections } from '../../../test/support/db-faults.ts';
import { openExchangeTestDatabase, type ExchangeTestDatabase } from '../../../test/support/exchange-delivery.ts';
import { payloadKey } from '../handoff.ts';
import { RECENT_PAYLOAD_MAX } from '../recent-payloads.ts';
import type { RuleBody } from '../rules/schemas.ts';
import { RuleStore } from '../rules/store.ts';
import type { Channel, ExchangeTables, Rule } from '../tables.ts';
import { MessageIntake } from './accept.ts';

const message = (subject: string, body = 'hello') =>
  Buffer.from(`From: a@org.example\r\nSubject: ${subject}\r\nX-Mark: yes\r\n\r\n${body}\r\n`);

describe('MessageIntake matching per recipient', () => {
  let testDb: ExchangeTestDatabase;
  let db: Kysely<ExchangeTables>;
  let dir: string;
  let objects: ObjectStore;
  let rules: RuleStore;
  let intake: MessageIntake;
  /** Runs once after the intake's next read of the rules, before its write: another instance's change. */
  let afterRead: (() => Promise<void>) | undefined;

  const rule = (name: string, priority: number, params: object, outbound: string[], more = {}) =>
    rules.create({
      name,
      priority,
      configuration: { params: { channel: 'smtp', ...params }, outbound, ...more },
    } as RuleBody);

  const keys = async () => {
    const found: string[] = [];
    for await (const object of objects.list('exchange/payloads/')) found.push(object.key);
    return found.sort();
  };

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_split', 4);
    db = testDb.db;
    dir = await mkdtemp(join(tmpdir(), 'sealpost-split-'));
    objects = createLocalObjectStore({ dir });
    const store = new RuleStore(db);
    // The intake's fresh read, with a hook between it and the write.
    rules = Object.assign(Object.create(store) as RuleStore, {
      forChannel: async (channel: Channel): Promise<Rule[]> => {
        const read = await store.forChannel(channel);
        const change = afterRead;
        afterRead = undefined;
        await change?.();
        return read;
      },
    });
    intake = new MessageIntake({ db, objects, rules, logger: createLogger({ level: 'silent' }) });
  });
  beforeEach(async () => {
    afterRead = undefined;
    await db.deleteFrom('rules').execute();
  });
  after(async () => {
    await testDb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const countAll = async () =>
    Number((await db.selectFrom('envelopes').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  const envelopesOf = (ids: string[]) =>
    db.selectFrom('envelopes').selectAll().where('id', 'in', ids).orderBy('created_at').execute();

  it('splits recipients of different rules into envelopes, each with its payload, rule and history', async () => {
    const outside = await rule('outside', 1, { recipientDomains: ['!org.example'] }, ['seal']);
    await rule('inside', 2, {}, ['smtp']);
    const payload = message('[secure] Offer');
    const accepted = await intake.accept({
      channel: 'smtp',
      sender: 'dana@org.example',
      recipients: ['a@org.example', 'c@example.com', 'b@hr.org.example', 'd@example.net'],
      payload,
    });
    assert.deepEqual(accepted.outbound, ['smtp']);
    assert.equal(accepted.parts?.length, 2);
    const [first, second] = accepted.parts!;
    assert.equal(first!.envelopeId, accepted.envelopeId);
    assert.deepEqual(second!.outbound, ['seal']);

    const rows = await envelopesOf([first!.envelopeId, second!.envelopeId]);
    const byId = new Map(rows.map((row) => [row.id, row]));
    assert.deepEqual(byId.get(first!.envelopeId)!.recipients, ['a@org.example', 'b@hr.org.example']);
    assert.deepEqual(byId.get(second!.envelopeId)!.recipients, ['c@example.com', 'd@example.net']);
    assert.equal(byId.get(second!.envelopeId)!.rule_id, outside.id);
    for (const row of rows) {
      assert.equal(row.payload_key, payloadKey(row.id));
      assert.ok((await objects.getBytes(row.payload_key, 1 << 20))!.equals(payload), 'each part has the bytes');
      const history = await db
        .selectFrom('message_status')
        .select(['status', 'detail'])
        .where('envelope_id', '=', row.id)
        .orderBy('id')
        .execute();
      const part = row.id === accepted.envelopeId ? 1 : 2;
      assert.deepEqual(
        history.map((h) => h.status),
        ['accepted', 'routed'],
      );
      assert.equal(
        history[0]!.detail,
        `${payload.length} bytes over smtp; part ${part} of 2 of message ${accepted.envelopeId}, split by rule ` +
          `(envelopes ${first!.envelopeId}, ${second!.envelopeId})`,
      );
      assert.equal(history[1]!.detail, part === 1 ? 'by rule "inside" to smtp' : 'by rule "outside" to seal');
    }
  });

  it('records the subject text to strip; a message all of one rule stays one envelope', async () => {
    await rule('tag', 1, { subjectContains: '[SECURE]' }, ['seal'], { stripSubjectTag: true });
    await rule('rest', 2, {}, ['smtp']);
    const tagged = await intake.accept({
      channel: 'smtp',
      sender: 'dana@org.example',
      recipients: ['a@org.example', 'c@example.com'],
      payload: message('=?UTF-8?Q?=5Bsecure=5D_Vertr=C3=A4ge?='),
    });
    assert.equal(tagged.parts, undefined);
    const [row] = await envelopesOf([tagged.envelopeId]);
    assert.deepEqual(row!.outbound, ['seal']);
    assert.equal(row!.subject_strip, '[SECURE]');
    assert.deepEqual(row!.recipients, ['a@org.example', 'c@example.com']);
    const plain = await intake.accept({
      channel: 'smtp',
      sender: 'dana@org.example',
      recipients: ['a@org.example'],
      payload: message('Minutes'),
    });
    const [relayed] = await envelopesOf([plain.envelopeId]);
    assert.deepEqual(relayed!.outbound, ['smtp']);
    assert.equal(relayed!.subject_strip, null);
  });

  it('reads the header block of a streamed message from the store, and copies the stored payload', async () => {
    await rule('marked', 1, { header: { name: 'x-mark', value: 'yes' }, recipientDomains: ['example.com'] }, ['seal']);
    await rule('rest', 2, {}, ['smtp']);
    const big = message('Large', 'x'.repeat(RECENT_PAYLOAD_MAX + 1000));
    const accepted = await intake.accept({
      channel: 'smtp',
      sender: 'dana@org.example',
      recipients: ['c@example.com', 'a@org.example'],
      payload: Readable.from([big.subarray(0, 10), big.subarray(10)]),
    });
    assert.deepEqual(
      accepted.parts?.map((p) => p.outbound),
      [['seal'], ['smtp']],
    );
    for (const part of accepted.parts!) {
      const stored = await objects.get(payloadKey(part.envelopeId));
      const chunks: Buffer[] = [];
      for await (const chunk of stored) chunks.push(chunk as Buffer);
      assert.ok(Buffer.concat(chunks).equals(big), 'the copy holds the same bytes');
    }
  });

  it('a recipient no rule takes refuses the whole message with a 503, and nothing is left', async () => {
    await rule('outside', 1, { recipientDomains: ['!org.example'] }, ['seal']);
    const before = await keys();
    const count = await countAll();
    await assert.rejects(
      intake.accept({
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['c@example.com', 'a@org.example'],
        payload: message('Hi'),
      }),
      (error: { status?: number; message: string }) =>
        error.status === 503 && /No delivery rule takes recipient a@org\.example/.test(error.message),
    );
    assert.deepEqual(await keys(), before, 'no payload left');
    assert.equal(await countAll(), count, 'no row written');
  });

  it('a rule deleted elsewhere after the read: nothing is written to it, the rules are read again', async () => {
    const outside = await rule('outside', 1, { recipientDomains: ['!org.example'] }, ['seal']);
    const rest = await rule('rest', 2, {}, ['smtp']);
    afterRead = async () => {
      await db.deleteFrom('rules').where('id', '=', outside.id).execute();
    };
    const accepted = await intake.accept({
      channel: 'smtp',
      sender: 'dana@org.example',
      recipients: ['a@org.example', 'c@example.com'],
      payload: message('Hi'),
    });
    assert.equal(accepted.parts, undefined, 'one rule left: one envelope');
    const [row] = await envelopesOf([accepted.envelopeId]);
    assert.equal(row!.rule_id, rest.id);
    assert.deepEqual(row!.recipients, ['a@org.example', 'c@example.com']);
    const leftover = (await keys()).filter((key) => !key.endsWith(accepted.envelopeId));
    const rows = new Set((await db.selectFrom('envelopes').select('payload_key').execute()).map((r) => r.payload_key));
    assert.deepEqual(
      leftover.filter((key) => !rows.has(key)),
      [],
      'the first try’s copy was deleted',
    );
  });

  it('a rule changed on another instance after the read is read again too; all gone: 503, nothing left', async () => {
    const outside = await rule('outside', 1, { recipientDomains: ['!org.example'] }, ['seal']);
    await rule('rest', 2, {}, ['smtp']);
    afterRead = async () => {
      await db
        .updateTable('rules')
        .set({ outbound: ['smtp'], updated_at: new Date(Date.now() + 1000) })
        .where('id', '=', outside.id)
        .execute();
    };
    const changed = await intake.accept({
      channel: 'smtp',
      sender: 'dana@org.example',
      recipients: ['c@example.com'],
      payload: message('Hi'),
    });
    assert.deepEqual(changed.outbound, ['smtp'], 'the rule as it is now');

    const before = await keys();
    const count = await countAll();
    // Deleted after each read: the second read's choice is gone as well.
    let reads = 0;
    const deleteAll = async () => {
      reads += 1;
      await db
        .deleteFrom('rules')
        .where('name', '=', reads === 1 ? 'outside' : 'rest')
        .execute();
      if (reads === 1) afterRead = deleteAll;
    };
    afterRead = deleteAll;
    await assert.rejects(
      intake.accept({
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['a@org.example', 'c@example.com'],
        payload: message('Hi'),
      }),
      /Delivery rules changed while the message was being accepted/,
    );
    assert.deepEqual(await keys(), before, 'no payload left');
    assert.equal(await countAll(), count, 'no row written');
  });

  it('a write PostgreSQL refuses (rolled back) leaves no payload of any part', async () => {
    await rule('outside', 1, { recipientDomains: ['!org.example'] }, ['seal']);
    await rule('inside', 2, {}, ['smtp']);
    const envelopeId = '00000000-0000-4000-8000-0000000c0de1';
    // A row with the first part's id, written meanwhile: the transaction's insert fails and rolls back.
    afterRead = async () => {
      await db
        .insertInto('envelopes')
        .values({
          id: envelopeId,
          channel: 'smtp',
          sender: '',
          recipients: ['x@example.com'],
          size: 1,
          payload_key: 'exchange/payloads/elsewhere',
          rule_id: null,
          outbound: ['smtp'],
          status: 'delivered',
        })
        .execute();
    };
    const before = await keys();
    await assert.rejects(
      intake.accept({
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['a@org.example', 'c@example.com'],
        payload: message('Hi'),
        envelopeId,
      }),
      (error: unknown) => error instanceof AppError && error.status === 503,
    );
    assert.deepEqual(await keys(), before, 'the payload and its copy deleted');
    await db.deleteFrom('envelopes').where('id', '=', envelopeId).execute();
  });

  it("keeps every part's payload when the write's outcome is unknown (connection lost), for the sweep", async () => {
    await rule('outside', 1, { recipientDomains: ['!org.example'] }, ['seal']);
    await rule('inside', 2, {}, ['smtp']);
    // An intake with a pool of its own, cut off between its read of the rules and its write.
    const other = await openDatabase({ url: testDb.url, poolSize: 1 });
    const otherDb = other.db.withSchema('exchange') as Kysely<ExchangeTables>;
    const store = new RuleStore(otherDb);
    let restore: (() => Promise<void>) | undefined;
    const cutOffRules = Object.assign(Object.create(store) as RuleStore, {
      forChannel: async (channel: Channel) => {
        const read = await store.forChannel(channel);
        restore = await refuseConnections(testDb.url);
        return read;
      },
    });
    const cutOff = new MessageIntake({
      db: otherDb,
      objects,
      rules: cutOffRules,
      logger: createLogger({ level: 'silent' }),
    });
    const envelopeId = '00000000-0000-4000-8000-0000000c0de2';
    const before = new Set(await keys());
    try {
      await assert.rejects(
        cutOff.accept({
          channel: 'smtp',
          sender: 'dana@org.example',
          recipients: ['a@org.example', 'c@example.com'],
          payload: message('Hi'),
          envelopeId,
        }),
        (error: unknown) => error instanceof AppError && error.status === 503,
      );
    } finally {
      await restore?.();
      await other.close();
    }
    const kept = (await keys()).filter((key) => !before.has(key));
    assert.equal(kept.length, 2, 'the payload and its copy stay: the rows might have been committed');
    assert.ok(kept.includes(payloadKey(envelopeId)));
    assert.deepEqual(await envelopesOf([envelopeId]), [], 'no row: the sweep will remove them');
    await objects.deleteMany(kept);
  });
});
