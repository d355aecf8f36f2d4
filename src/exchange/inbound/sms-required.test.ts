import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppError } from '../../kernel/errors.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createLocalObjectStore, type ObjectStore } from '../../kernel/objects/index.ts';
import {
  openExchangeTestDatabase,
  payloadCount,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';
import { refusedPort } from '../../../test/support/ports.ts';
import { RuleStore } from '../rules/store.ts';
import { MessageIntake } from './accept.ts';
import { SealNumbers, type NumbersOnRecord } from './sms-required.ts';
import { replyFor } from './smtp-replies.ts';

/**
 * SIGN_IN_REQUIRE_SMS at the intake (docs/design.md#contacts): which recipients count, one question to the seal
 * service per message, the refusal naming them, and a refusal for now when the seal service cannot answer.
 */

const message = (headers: string[]) =>
  Buffer.from([...headers, 'Subject: Hello', '', 'Sealed for you.', ''].join('\r\n'));

describe('SIGN_IN_REQUIRE_SMS at the intake', () => {
  let testDb: ExchangeTestDatabase;
  let dir: string;
  let objects: ObjectStore;
  let rules: RuleStore;
  /** The recipients asked about, per call; and who has a number on record. */
  const asked: string[][] = [];
  let onRecord = new Set<string>();
  const numbers: NumbersOnRecord = {
    async withNumber(recipients) {
      asked.push(recipients);
      return new Set(recipients.map((r) => r.toLowerCase()).filter((r) => onRecord.has(r)));
    },
  };
  const intake = (smsRequired: NumbersOnRecord) =>
    new MessageIntake({ db: testDb.db, objects, rules, logger: createLogger({ level: 'silent' }), smsRequired });

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_sms_required', 2);
    dir = await mkdtemp(join(tmpdir(), 'sealpost-sms-required-'));
    objects = createLocalObjectStore({ dir });
    rules = new RuleStore(testDb.db);
    await rules.create({
      name: 'seal mail',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
    });
    await rules.create({
      name: 'relay replies',
      priority: 1,
      configuration: { params: { channel: 'json' }, outbound: ['smtp'] },
    });
  });
  after(async () => {
    await testDb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses a message sealed for recipients without a number, naming them; asks once; keeps nothing', async () => {
    asked.length = 0;
    onRecord = new Set(['listed@example.org']);
    const raw = message([
      'From: dana@sender.example',
      'To: Listed <listed@example.org>, given@example.org',
      'Cc: cc-only@example.org',
      'X-Sealpost-Mobile: given@example.org=+41791234567',
    ]);
    const before = await payloadCount(objects);
    await assert.rejects(
      intake(numbers).accept({
        channel: 'smtp',
        sender: 'dana@sender.example',
        recipients: ['listed@example.org', 'given@example.org', 'bcc@example.org'],
        payload: raw,
      }),
      (error: AppError) => {
        assert.equal(error.errorCode, 'mobile_required');
        assert.equal(error.status, 400);
        assert.deepEqual(error.details.recipients, ['cc-only@example.org', 'bcc@example.org']);
        const reply = replyFor(error);
        assert.equal(reply.responseCode, 550);
        assert.match(reply.message, /^5\.7\.1 No mobile number for cc-only@example\.org, bcc@example\.org:/);
        return true;
      },
    );
    // The header's recipient is not asked about; the others in one request.
    assert.deepEqual(asked, [['listed@example.org', 'cc-only@example.org', 'bcc@example.org']]);
    assert.equal(await payloadCount(objects), before, 'the payload was removed again');
    const rows = await testDb.db.selectFrom('envelopes').select('id').execute();
    assert.equal(rows.length, 0, 'no envelope was written');
  });

  it('takes the message once every recipient has a number from some source', async () => {
    asked.length = 0;
    onRecord = new Set(['listed@example.org', 'cc-only@example.org']);
    const accepted = await intake(numbers).accept({
      channel: 'smtp',
      sender: 'dana@sender.example',
      recipients: ['listed@example.org', 'cc-only@example.org'],
      payload: message(['From: dana@sender.example', 'To: listed@example.org', 'Cc: cc-only@example.org']),
    });
    assert.deepEqual(accepted.outbound, ['seal']);
    assert.equal(asked.length, 1);
  });

  it('does not ask about a message its rules only relay (a reply)', async () => {
    asked.length = 0;
    onRecord = new Set();
    const accepted = await intake(numbers).accept({
      channel: 'json',
      sender: 'listed@example.org',
      recipients: ['dana@sender.example'],
      payload: message(['From: listed@example.org', 'To: dana@sender.example']),
    });
    assert.deepEqual(accepted.outbound, ['smtp']);
    assert.deepEqual(asked, []);
  });

  it('refuses for now (503, SMTP 451) and keeps nothing when the seal service cannot answer', async () => {
    const down = new SealNumbers({ baseUrl: `http://127.0.0.1:${await refusedPort()}`, serviceToken: 't' });
    const before = await payloadCount(objects);
    await assert.rejects(
      intake(down).accept({
        channel: 'smtp',
        sender: 'dana@sender.example',
        recipients: ['someone@example.org'],
        payload: message(['From: dana@sender.example', 'To: someone@example.org']),
      }),
      (error: AppError) => {
        assert.equal(error.status, 503);
        assert.equal(error.errorCode, 'unavailable');
        assert.equal(replyFor(error).responseCode, 451);
        return true;
      },
    );
    assert.equal(await payloadCount(objects), before);
  });
});
