import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { keepReplaced, readReplaced, REPLACED_KEPT } from './replaced-codes.ts';

/** The code a newer one replaced is said as replaced, and costs no try of the new code (docs/decisions.md). */
describe('a code replaced by a newer one', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({
      env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_NUMBER_HOURLY: '1000', SMS_LIMIT_IP_HOURLY: '1000' },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  async function askCode(reader: Reader, messageId: string): Promise<string> {
    const sent = await reader.request('POST', '/v1/auth/code', {
      body: { messageId, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    return harness.sms.lastCodeTo(ALICE.mobile);
  }
  async function opened(messageId: string): Promise<Reader> {
    const reader = harness.reader();
    await reader.get(`/v1/config?messageId=${messageId}`);
    return reader;
  }
  const verify = (reader: Reader, code: string) => reader.request('POST', '/v1/auth/verify', { body: { code } });

  it('answers code_replaced with all the new code’s tries left, and the new code still signs in', async () => {
    const record = harness.sealSample();
    const reader = await opened(record.id);
    const first = await askCode(reader, record.id);
    const second = await askCode(reader, record.id);
    assert.notEqual(first, second);
    const replaced = await verify(reader, first);
    assertError(replaced, 401, 'code_replaced');
    assert.equal(replaced.body.attemptsLeft, 5, 'no try of the new code was spent');
    const again = await verify(reader, first);
    assertError(again, 401, 'code_replaced');
    assert.equal(again.body.attemptsLeft, 5);
    const mistyped = await verify(reader, wrong(second));
    assertError(mistyped, 401, 'incorrect_code');
    assert.equal(mistyped.body.attemptsLeft, 4, 'a wrong code still costs a try');
    assert.equal((await verify(reader, second)).status, 200);
  });

  it('recognises the last few codes, each only while it would still be fresh', async () => {
    const record = harness.sealSample();
    const reader = await opened(record.id);
    const codes: string[] = [];
    for (let i = 0; i <= REPLACED_KEPT + 1; i++) codes.push(await askCode(reader, record.id));
    const oldest = codes[0]!;
    const kept = codes.slice(1, -1);
    // The oldest fell out of the list: it is a wrong code like any other (unless a later code equals it by chance).
    if (!codes.slice(1).includes(oldest)) assertError(await verify(reader, oldest), 401, 'incorrect_code');
    for (const code of kept) assertError(await verify(reader, code), 401, 'code_replaced');
    // Past the code lifetime (15 min), a replaced code is only a wrong one.
    harness.clock.advance(16 * 60 * 1000);
    const late = await verify(reader, kept.at(-1)!);
    assert.notEqual(late.body.errorCode, 'code_replaced');
  });

  it('counts replaced tries: past CODE_MAX_ATTEMPTS of them, each is a wrong try of the new code', async () => {
    const record = harness.sealSample();
    const reader = await opened(record.id);
    const first = await askCode(reader, record.id);
    const second = await askCode(reader, record.id);
    for (let i = 0; i < 5; i++) assertError(await verify(reader, first), 401, 'code_replaced');
    const counted = await verify(reader, first);
    assertError(counted, 401, 'incorrect_code');
    assert.equal(counted.body.attemptsLeft, 4);
    assert.equal((await verify(reader, second)).status, 200);
  });

  it('keeps no more than REPLACED_KEPT codes, newest first, and nothing past their lifetime', () => {
    const target = {
      purpose: 'sign_in' as const,
      method: 'sms' as const,
      messageId: 'm',
      email: 'a@example.com',
      destination: '+41791234567',
    };
    const now = new Date('2026-01-01T12:00:00Z');
    const code = (minutesAgo: number, hmac: string) => ({
      hmac,
      createdAt: now.getTime() - minutesAgo * 60_000,
      target,
    });
    const earlier = [code(2, 'bb'), code(3, 'cc'), code(4, 'dd'), code(20, 'ee')];
    const kept = readReplaced(keepReplaced(earlier, code(1, 'aa'), now, 15 * 60_000));
    assert.deepEqual(
      kept.map((c) => c.hmac),
      ['aa', 'bb', 'cc'],
    );
    assert.equal(keepReplaced([code(20, 'ee')], undefined, now, 15 * 60_000), null);
    assert.deepEqual(readReplaced('not json'), []);
  });
});

describe('the wait between two codes is said as a wait, not as too many codes', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({
      env: { SMS_LIMIT_NUMBER_INTERVAL: '60s', SMS_LIMIT_NUMBER_HOURLY: '2', SMS_LIMIT_IP_HOURLY: '1000' },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  it('answers limit "interval" within the interval, and "hourly" only once the hourly count is reached', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    await reader.get(`/v1/config?messageId=${record.id}`);
    const ask = () =>
      reader.request('POST', '/v1/auth/code', {
        body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
      });
    assert.equal((await ask()).status, 200);
    const waiting = await ask();
    assertError(waiting, 429, 'sms_rate_limit');
    assert.equal(waiting.body.limit, 'interval');
    harness.clock.advance(61_000);
    assert.equal((await ask()).status, 200);
    harness.clock.advance(61_000);
    const tooMany = await ask();
    assertError(tooMany, 429, 'sms_rate_limit');
    assert.equal(tooMany.body.limit, 'hourly');
    assert.ok(Number(tooMany.headers.get('retry-after')) > 60, 'the wait is until the hour has passed');
  });

  it('tells a reload of a void code as gone (voided), with where it went, and never as pending', async () => {
    const record = harness.sealSample();
    const bob = { email: 'bob@example.com' };
    const reader = harness.reader();
    await reader.get(`/v1/config?messageId=${record.id}`);
    const sent = await reader.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: bob.email, method: 'email' },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const pending = (await reader.get(`/v1/config?messageId=${record.id}`)).body;
    assert.equal(pending.codePending?.attemptsLeft, 5);
    for (let i = 0; i < 5; i++) await reader.request('POST', '/v1/auth/verify', { body: { code: '000000' } });
    const config = (await reader.get(`/v1/config?messageId=${record.id}`)).body;
    assert.equal(config.codePending, undefined);
    assert.equal(config.codeGone?.reason, 'voided');
    assert.equal(config.codeGone?.method, 'email');
    assert.equal(config.codeGone?.email, bob.email);
  });
});
