import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../support/auth-assert.ts';
import { startAuthHarness, type AuthHarness } from '../support/auth-harness.ts';
import type { Reader } from '../support/auth-reader.ts';
import type { SignInMethodName } from '../../src/contracts/seal.ts';

/**
 * An attacker who wants a code for someone else's message cycles everything a client controls: a new
 * session for every request, a made-up X-Forwarded-For, the way the number or address is written. The
 * limits must count what the attacker cannot change: the connection's address (or, behind trusted
 * proxies, the address the proxy saw), the destination, and the guesses per code.
 */

interface Person {
  email: string;
  mobile: string;
}

/** A recipient with a mobile number no other test here uses (the per-number limit is per number). */
let serial = 0;
const person = (tag: string, n: number): Person => ({
  email: `${tag}-${n}@example.com`,
  mobile: `+41795${String(++serial).padStart(6, '0')}`,
});

async function freshSession(harness: AuthHarness, messageId: string, forwardedFor?: string): Promise<Reader> {
  const reader = harness.reader(forwardedFor);
  const config = await reader.get(`/v1/config?messageId=${messageId}`);
  assert.equal(config.status, 200, JSON.stringify(config.body));
  return reader;
}

function askForCode(
  reader: Reader,
  messageId: string,
  who: { email: string; mobile?: string },
  method: SignInMethodName = 'sms',
) {
  return reader.request('POST', '/v1/auth/code', {
    body: { messageId, email: who.email, ...(who.mobile ? { mobile: who.mobile } : {}), method },
  });
}

/** A six-digit code that is not `code`. */
const wrong = (code: string, i: number) => String((Number(code) + 1 + i * 7919) % 1_000_000).padStart(6, '0');

describe('OTP brute force, AUTH_TRUST_PROXY off: the per-IP limit counts the connection, not X-Forwarded-For', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SMS_LIMIT_IP_HOURLY: '3', SMS_LIMIT_NUMBER_INTERVAL: '0s' } });
  });
  after(async () => {
    await harness?.stop();
  });

  it('gives an attacker cycling sessions and forwarded addresses no more than SMS_LIMIT_IP_HOURLY codes', async () => {
    const people = Array.from({ length: 6 }, (_, i) => person('ipoff', i));
    const { id } = harness.seal.register({
      raw: 'Subject: x\n\nx\n',
      recipients: people.map((p) => ({ ...p, method: 'sms' as const })),
    });
    const before = harness.sms.messages.length;
    const statuses: number[] = [];
    for (const [i, target] of people.entries()) {
      const reader = await freshSession(harness, id, `198.51.100.${i + 1}, 203.0.113.${i + 1}`);
      const answer = await askForCode(reader, id, target);
      statuses.push(answer.status);
      if (answer.status !== 200) assertError(answer, 429, 'sms_rate_limit');
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429]);
    assert.equal(harness.sms.messages.length - before, 3);
  });
});

describe('OTP brute force behind a trusted proxy (AUTH_TRUST_PROXY=1)', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({
      env: {
        AUTH_TRUST_PROXY: '1',
        SMS_LIMIT_IP_HOURLY: '3',
        SMS_LIMIT_NUMBER_HOURLY: '5',
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
        CODE_MAX_ATTEMPTS: '5',
      },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  it('counts the address the proxy saw: what the client puts before X-Forwarded-For changes nothing', async () => {
    const people = Array.from({ length: 6 }, (_, i) => person('proxy', i));
    const { id } = harness.seal.register({
      raw: 'Subject: x\n\nx\n',
      recipients: people.map((p) => ({ ...p, method: 'sms' as const })),
    });
    // The proxy appends the address it saw (203.0.113.50); the client sends the rest. Spelled as an
    // IPv4-mapped IPv6 address it is still the same client.
    const chains = [
      '10.0.0.1, 203.0.113.50',
      '1.2.3.4, 5.6.7.8, 203.0.113.50',
      'unknown, ::ffff:203.0.113.50',
      '203.0.113.51, 203.0.113.50',
      '203.0.113.50',
      '127.0.0.1, 203.0.113.50',
    ];
    const statuses: number[] = [];
    for (const [i, chain] of chains.entries()) {
      const answer = await askForCode(await freshSession(harness, id, chain), id, people[i]!);
      statuses.push(answer.status);
      if (answer.status !== 200) assertError(answer, 429, 'sms_rate_limit');
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429]);
  });

  it('holds the per-number limit whatever the sessions, client addresses and way the number is written', async () => {
    const target = person('number', 1);
    const { id } = harness.seal.register({ raw: 'Subject: x\n\nx\n', recipients: [{ ...target, method: 'sms' }] });
    const spellings = [
      target.mobile,
      target.mobile.replace('+', '00'),
      `${target.mobile.slice(0, 3)} ${target.mobile.slice(3, 5)} ${target.mobile.slice(5)}`,
      ` ${target.mobile} `,
    ];
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) {
      const reader = await freshSession(harness, id, `192.0.2.${i + 1}`);
      const answer = await askForCode(reader, id, {
        email: target.email.toUpperCase(),
        mobile: spellings[i % spellings.length],
      });
      statuses.push(answer.status);
      if (answer.status !== 200) assertError(answer, 429, 'sms_rate_limit');
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429, 429]);
    assert.equal(harness.sms.messages.filter((sms) => sms.to === target.mobile).length, 5);
  });

  it('holds the per-address limit of email codes however the address is written', async () => {
    const target = { email: 'mail-target@example.com' };
    const { id } = harness.seal.register({ raw: 'Subject: x\n\nx\n', recipients: [{ ...target, method: 'email' }] });
    const spellings = [
      'mail-target@example.com',
      'mail-target@EXAMPLE.COM',
      ' mail-target@example.com ',
      'mail-target@Example.Com',
    ];
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const answer = await askForCode(
        await freshSession(harness, id, `192.0.2.${100 + i}`),
        id,
        { email: spellings[i % spellings.length]! },
        'email',
      );
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
  });

  it('allows CODE_MAX_ATTEMPTS guesses a code: 5 codes an hour, 5 guesses each, then the right one fails', async () => {
    const target = person('guess', 1);
    const { id } = harness.seal.register({ raw: 'Subject: x\n\nx\n', recipients: [{ ...target, method: 'sms' }] });
    let guessesEvaluated = 0;
    for (let round = 0; round < 5; round++) {
      const attacker = await freshSession(harness, id, `198.18.0.${round + 1}`);
      const sent = await askForCode(attacker, id, target);
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      // The attacker does not see the code; the test does, to prove that even the right one is refused after 5 tries.
      const code = harness.sms.lastCodeTo(target.mobile);
      for (let i = 0; i < 5; i++) {
        // The fifth wrong guess voids the code and says so.
        assertError(
          await attacker.request('POST', '/v1/auth/verify', { body: { code: wrong(code, i) } }),
          401,
          i < 4 ? 'incorrect_code' : 'code_attempts_exceeded',
        );
        guessesEvaluated++;
      }
      // Further guesses, the right one among them, all fail: the code is void.
      for (const guess of [wrong(code, 99), code]) {
        assertError(
          await attacker.request('POST', '/v1/auth/verify', { body: { code: guess } }),
          401,
          'code_attempts_exceeded',
        );
      }
      assertError(await attacker.get('/v1/message'), 401, 'unauthenticated');
    }
    // A sixth code within the hour is refused, whatever session or address asks.
    assertError(await askForCode(await freshSession(harness, id, '198.18.0.99'), id, target), 429, 'sms_rate_limit');
    assert.equal(guessesEvaluated, 25, 'at most 5 codes x 5 guesses an hour for one number');

    // A session without a code of its own gets nothing from guessing either.
    const idle = await freshSession(harness, id, '198.18.0.100');
    for (let i = 0; i < 10; i++)
      assertError(
        await idle.request('POST', '/v1/auth/verify', { body: { code: String(i).padStart(6, '0') } }),
        401,
        'incorrect_code',
      );
    assertError(await idle.get('/v1/message'), 401, 'unauthenticated');
  });
});
