import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, BOB, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';

const NEW_MOBILE = '+41797654321';

describe("changing the recipient's mobile number", () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_NUMBER_HOURLY: '1000' } });
  });
  after(async () => {
    await harness?.stop();
  });

  async function signedInAlice(): Promise<{ reader: Reader; messageId: string }> {
    const record = harness.sealSample();
    const reader = harness.reader();
    await signInAlice(harness, reader, record.id);
    return { reader, messageId: record.id };
  }

  it('401 when not signed in', async () => {
    const reader = harness.reader();
    await reader.get('/v1/config');
    assertError(await reader.request('PUT', '/v1/mobile', { body: { mobile: NEW_MOBILE } }), 401, 'unauthenticated');
    assertError(
      await reader.request('POST', '/v1/mobile/verify', { body: { code: '123456' } }),
      401,
      'unauthenticated',
    );
  });

  it('invalid_mobile (400) for a number that is not valid', async () => {
    const { reader } = await signedInAlice();
    assertError(await reader.request('PUT', '/v1/mobile', { body: { mobile: '0797654321' } }), 400, 'invalid_mobile');
  });

  it('new_mobile_conflict (409) when the new number is the current one, however it is written', async () => {
    const { reader } = await signedInAlice();
    const sms = harness.sms.messages.length;
    assertError(
      await reader.request('PUT', '/v1/mobile', { body: { mobile: '0041 79 123 45 67' } }),
      409,
      'new_mobile_conflict',
    );
    assert.equal(harness.sms.messages.length, sms);
  });

  /** PUT /v1/mobile, then the code to the current number: answers the code sent to the new one. */
  async function proveCurrent(reader: Reader, mobile: string): Promise<string> {
    const changing = await reader.request('PUT', '/v1/mobile', { body: { mobile } });
    assert.equal(changing.status, 202, JSON.stringify(changing.body));
    assert.deepEqual(changing.body, { step: 'current', to: '+41*******67', codeLength: 6, expiresIn: 900 });
    const proven = await reader.request('POST', '/v1/mobile/verify', {
      body: { code: harness.sms.lastCodeTo(ALICE.mobile) },
    });
    assert.equal(proven.status, 202, JSON.stringify(proven.body));
    assert.equal(proven.body.step, 'new');
    return harness.sms.lastCodeTo(normalized(mobile));
  }
  const normalized = (mobile: string) => `+${mobile.replace(/\D/g, '')}`;

  it('asks a code of the current number, then the new one, changes it, tells the old number and address', async () => {
    const { reader, messageId } = await signedInAlice();
    const sentBefore = harness.sms.messages.length;
    const changing = await reader.request('PUT', '/v1/mobile', { body: { mobile: '+41 79 765 43 21' } });
    assert.equal(changing.status, 202, JSON.stringify(changing.body));
    assert.equal(changing.body.step, 'current');
    assert.deepEqual(
      harness.sms.messages.slice(sentBefore).map((m) => m.to),
      [ALICE.mobile],
      'the first code goes to the current number, nothing to the new one yet',
    );
    // The new number's code is refused before the current number is proven: there is none yet.
    assertError(await reader.request('POST', '/v1/mobile/verify', { body: { code: '000000' } }), 401, 'incorrect_code');
    const proven = await reader.request('POST', '/v1/mobile/verify', {
      body: { code: harness.sms.lastCodeTo(ALICE.mobile) },
    });
    assert.equal(proven.status, 202, JSON.stringify(proven.body));
    assert.deepEqual(proven.body, { step: 'new', to: '+41*******21', codeLength: 6, expiresIn: 900 });
    const code = harness.sms.lastCodeTo(NEW_MOBILE);

    // Not yet confirmed: the old number still signs in.
    const before = harness.reader();
    await before.get(`/v1/config?messageId=${messageId}`);
    assert.equal(
      (
        await before.request('POST', '/v1/auth/code', {
          body: { messageId, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
        })
      ).status,
      200,
    );

    const confirmed = await reader.request('POST', '/v1/mobile/verify', { body: { code } });
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.deepEqual(confirmed.body, { mobile: NEW_MOBILE });

    // The old number and the address are told, with the sender and the time.
    const notice = harness.sms.messages.filter((m) => m.to === ALICE.mobile).at(-1)!;
    assert.match(
      notice.text,
      /mobile number for your sealed message from sender@example\.org was changed on .+ UTC\. If this was not you/,
    );
    const outbox = join(harness.auth.config.dataDir, 'outbox');
    const mails = await Promise.all(
      (await readdir(outbox))
        .filter((name) => name.endsWith('.eml'))
        .map((name) => readFile(join(outbox, name), 'utf8')),
    );
    const told = mails.find(
      (mail) =>
        /^To: alice@example\.com$/m.test(mail) &&
        /^Subject: Your mobile number for a sealed message was changed$/m.test(mail),
    );
    assert.ok(told, 'an email to the address on record');
    assert.match(
      (await simpleParser(told)).text ?? '',
      /from sender@example\.org was changed on .+ UTC, to \+41\*{7}21\./,
    );

    const later = harness.reader();
    await later.get(`/v1/config?messageId=${messageId}`);
    assertError(
      await later.request('POST', '/v1/auth/code', {
        body: { messageId, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
      }),
      403,
      'email_and_mobile_mismatch',
    );
    assert.equal(
      (
        await later.request('POST', '/v1/auth/code', {
          body: { messageId, email: ALICE.email, mobile: NEW_MOBILE, method: 'sms' },
        })
      ).status,
      200,
    );
    const signIn = await later.request('POST', '/v1/auth/verify', {
      body: { code: harness.sms.lastCodeTo(NEW_MOBILE) },
    });
    assert.equal(signIn.status, 200);
    // A further change to the same number is a conflict now.
    assertError(await later.request('PUT', '/v1/mobile', { body: { mobile: NEW_MOBILE } }), 409, 'new_mobile_conflict');
    // Only this message's record changed: another message for Alice still has the old number.
    const other = harness.sealSample();
    const elsewhere = harness.reader();
    await elsewhere.get(`/v1/config?messageId=${other.id}`);
    assert.equal(
      (
        await elsewhere.request('POST', '/v1/auth/code', {
          body: { messageId: other.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
        })
      ).status,
      200,
    );
  });

  it("a session alone cannot change the number: no code goes to the new one without the current one's", async () => {
    const { reader } = await signedInAlice();
    await reader.request('PUT', '/v1/mobile', { body: { mobile: '+41797000002' } });
    const wrong = String((Number(harness.sms.lastCodeTo(ALICE.mobile)) + 1) % 1e6).padStart(6, '0');
    assertError(await reader.request('POST', '/v1/mobile/verify', { body: { code: wrong } }), 401, 'incorrect_code');
    assert.equal(harness.sms.messages.filter((m) => m.to === '+41797000002').length, 0, 'no code to the new number');
  });

  it('refuses a wrong confirmation code, and does not take the confirmation codes for a sign-in', async () => {
    const { reader } = await signedInAlice();
    assertError(await reader.request('POST', '/v1/mobile/verify', { body: { code: '123456' } }), 401, 'incorrect_code');
    await reader.request('PUT', '/v1/mobile', { body: { mobile: '+41797000001' } });
    // Neither code of a mobile change signs anyone in.
    assertError(
      await reader.request('POST', '/v1/auth/verify', { body: { code: harness.sms.lastCodeTo(ALICE.mobile) } }),
      401,
      'incorrect_code',
    );
    const code = await proveCurrent(reader, '+41797000001');
    assertError(await reader.request('POST', '/v1/auth/verify', { body: { code } }), 401, 'incorrect_code');
    const wrong = String((Number(code) + 1) % 1e6).padStart(6, '0');
    assertError(await reader.request('POST', '/v1/mobile/verify', { body: { code: wrong } }), 401, 'incorrect_code');
    assert.equal((await reader.request('POST', '/v1/mobile/verify', { body: { code } })).status, 200);
  });

  it('forbidden_auth_method (403) for a recipient who signs in by email', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    await reader.get(`/v1/config?messageId=${record.id}`);
    await reader.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: BOB.email, method: 'email' },
    });
    const outbox = join(harness.auth.config.dataDir, 'outbox');
    const file = (await readdir(outbox))
      .filter((name) => name.endsWith('.eml'))
      .sort()
      .at(-1)!;
    const code = /Your Sealpost code is (\d{6})/.exec(await readFile(join(outbox, file), 'utf8'))![1]!;
    assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
    assertError(
      await reader.request('PUT', '/v1/mobile', { body: { mobile: NEW_MOBILE } }),
      403,
      'forbidden_auth_method',
    );
  });
});

describe('changing the mobile number: expiry', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SMS_CODE_EXPIRATION: '2s', SMS_LIMIT_NUMBER_INTERVAL: '0s' } });
  });
  after(async () => {
    await harness?.stop();
  });

  it('expired_code (401) for the right confirmation code after SMS_CODE_EXPIRATION', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    await signInAlice(harness, reader, record.id);
    await reader.request('PUT', '/v1/mobile', { body: { mobile: NEW_MOBILE } });
    assert.equal(
      (await reader.request('POST', '/v1/mobile/verify', { body: { code: harness.sms.lastCodeTo(ALICE.mobile) } }))
        .status,
      202,
    );
    const code = harness.sms.lastCodeTo(NEW_MOBILE);
    harness.clock.advance(2200);
    assertError(await reader.request('POST', '/v1/mobile/verify', { body: { code } }), 401, 'expired_code');
  });
});
