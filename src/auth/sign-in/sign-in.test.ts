import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { assertError } from '../../../test/support/auth-assert.ts';
import {
  ALICE,
  BOB,
  TEST_AUTH_SECRET,
  signInAlice,
  startAuthHarness,
  type AuthHarness,
} from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { deriveKeys } from '../secret.ts';
import { tokenHash } from '../sessions/store.ts';

const SESSION_COOKIE = /^sealpost_session=([A-Za-z0-9_-]{43}); Path=\/; HttpOnly; SameSite=Lax$/;
const REMEMBER_ME_COOKIE = /^sealpost_session=([A-Za-z0-9_-]{43}); Max-Age=2592000; Path=\/; HttpOnly; SameSite=Lax$/;

describe('auth service: sign-in by code', () => {
  let harness: AuthHarness;
  /** Every code and session token the tests saw: none may ever appear in the service's log. */
  const secrets = new Set<string>();
  const remember = (reader: Reader) => {
    if (reader.token) secrets.add(reader.token).add(tokenHash(reader.token));
  };

  before(async () => {
    // Rate limits are tested on their own (rate-limit.test.ts); here they must not get in the way.
    harness = await startAuthHarness({
      env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_NUMBER_HOURLY: '1000', SMS_LIMIT_IP_HOURLY: '1000' },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  async function requestSmsCode(reader: Reader, messageId: string, body: Record<string, unknown> = {}) {
    return reader.request('POST', '/v1/auth/code', {
      body: { messageId, email: ALICE.email, mobile: ALICE.mobile, method: 'sms', ...body },
    });
  }
  async function lastSmsCode(): Promise<string> {
    const code = harness.sms.lastCodeTo(ALICE.mobile);
    secrets.add(code);
    return code;
  }
  /** A reader who opened message `messageId`'s link (a session, no sign-in yet). */
  async function openedLink(messageId: string): Promise<Reader> {
    const reader = harness.reader();
    await reader.get(`/v1/config?messageId=${messageId}`);
    remember(reader);
    return reader;
  }
  /** A different six-digit code than the right one. */
  const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  describe('sessions and cookies', () => {
    it('starts a session on GET /v1/config: browser-session cookie, CSRF token, methods of the message', async () => {
      const record = harness.sealSample();
      const reader = harness.reader();
      const first = await reader.get(`/v1/config?messageId=${record.id}`);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.match(first.setCookie!, SESSION_COOKIE);
      assert.match(first.headers.get('x-csrf-token')!, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(first.headers.get('cache-control'), 'no-store');
      assert.deepEqual(first.body, {
        messageId: record.id,
        methods: ['email', 'sms'],
        // Who sent it, not what about (READER_SUBJECT_BEFORE_SIGN_IN, src/auth/sign-in/before-sign-in.test.ts).
        sender: record.sender,
        signedIn: false,
        codeLength: 6,
        codeExpiresIn: 900,
        maxAttempts: 5,
        rememberMeMaxAge: 2592000,
        limits: { perNumberInterval: 0, perNumberHourly: 1000, perIpHourly: 1000 },
      });
      // The same session next time: no new cookie, the same token.
      const token = reader.csrf;
      const second = await reader.get(`/v1/config?messageId=${record.id}`);
      assert.equal(second.setCookie, undefined);
      assert.equal(second.headers.get('x-csrf-token'), token);
      remember(reader);
    });

    it('answers 404 with an error object for a message the seal service does not know', async () => {
      assertError(await harness.reader().get('/v1/config?messageId=no-such-message'), 404, 'not_found');
    });

    it('sends the code by SMS through the provider, with the configured text', async () => {
      const record = harness.sealSample();
      const reader = harness.reader();
      await reader.get(`/v1/config?messageId=${record.id}`);
      const before = harness.sms.messages.length;
      const sent = await requestSmsCode(reader, record.id, { mobile: '+41 79 123 45 67' });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assert.deepEqual(sent.body, { method: 'sms', codeLength: 6, expiresIn: 900 });
      assert.equal(harness.sms.messages.length, before + 1);
      const sms = harness.sms.messages.at(-1)!;
      assert.equal(sms.to, ALICE.mobile);
      assert.equal(sms.from, 'Sealpost');
      assert.match(sms.text, /^Your Sealpost code is \d{6}$/);
      assert.deepEqual(
        [sms.user, sms.password, sms.path, sms.contentType],
        ['sms-user', 'sms-password', '/sms', 'application/json'],
      );
      await lastSmsCode();
      remember(reader);
    });

    it('signs in with the right code, rotating session id and CSRF token (browser-session cookie)', async () => {
      const record = harness.sealSample();
      const reader = harness.reader();
      await reader.get(`/v1/config?messageId=${record.id}`);
      const before = { cookie: reader.cookie!, token: reader.token!, csrf: reader.csrf! };
      await requestSmsCode(reader, record.id);
      const verified = await reader.request('POST', '/v1/auth/verify', {
        body: { code: await lastSmsCode(), rememberMe: false },
      });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      assert.equal(verified.body.signedIn, true);
      assert.equal(verified.body.messageId, record.id);
      assert.equal(verified.body.email, ALICE.email);
      assert.equal(verified.body.rememberMe, false);
      const [, newToken] =
        SESSION_COOKIE.exec(verified.setCookie!) ?? assert.fail(`unexpected Set-Cookie ${verified.setCookie}`);
      assert.notEqual(newToken, before.token);
      assert.notEqual(verified.headers.get('x-csrf-token'), before.csrf);
      remember(reader);

      // Same row, new token: the old token is worth nothing.
      const rows = await harness.auth.database.db
        .withSchema('auth')
        .selectFrom('sessions')
        .select(['id', 'token_hash'])
        .execute();
      assert.equal(rows.filter((row) => row.token_hash === tokenHash(before.token)).length, 0);
      assert.equal(rows.filter((row) => row.token_hash === tokenHash(newToken!)).length, 1);
      assert.equal((await reader.get('/v1/message')).status, 200);
      const old = harness.reader();
      old.cookie = before.cookie;
      assertError(await old.get('/v1/message'), 401, 'unauthenticated');
      // The CSRF token of before sign-in does not go with the new session.
      assertError(
        await reader.request('PUT', '/v1/mobile', { body: { mobile: '+41797654321' }, csrf: before.csrf }),
        403,
        'csrf_token_invalid',
      );
      // GET /v1/config now says so.
      assert.equal((await reader.get(`/v1/config?messageId=${record.id}`)).body.signedIn, true);
    });

    it("sets a persistent cookie with Max-Age for 'keep me signed in'", async () => {
      const record = harness.sealSample();
      const reader = harness.reader();
      const verified = await signInAlice(harness, reader, record.id, true);
      assert.match(verified.setCookie!, REMEMBER_ME_COOKIE);
      assert.equal(verified.body.rememberMe, true);
      const lifetime = Date.parse(verified.body.expiresAt) - Date.now();
      assert.ok(lifetime > 719 * 3600_000 && lifetime <= 720 * 3600_000, verified.body.expiresAt);
      remember(reader);
    });

    it('logs out: deletes the session row, clears the cookie with an empty value and a negative Max-Age', async () => {
      const record = harness.sealSample();
      const reader = harness.reader();
      await signInAlice(harness, reader, record.id, true);
      const cookie = reader.cookie!;
      const token = reader.token!;
      remember(reader);
      const out = await reader.get('/logout');
      assert.equal(out.status, 200);
      assert.deepEqual(out.body, { signedOut: true });
      assert.equal(out.setCookie, 'sealpost_session=; Max-Age=-1; Path=/; HttpOnly; SameSite=Lax');
      const rows = await harness.auth.database.db
        .withSchema('auth')
        .selectFrom('sessions')
        .select('id')
        .where('token_hash', '=', tokenHash(token))
        .execute();
      assert.equal(rows.length, 0);
      const replay = harness.reader();
      replay.cookie = cookie;
      assertError(await replay.get('/v1/message'), 401, 'unauthenticated');
      // Without a session, logout still clears the cookie.
      assert.equal(
        (await harness.reader().get('/logout')).setCookie,
        'sealpost_session=; Max-Age=-1; Path=/; HttpOnly; SameSite=Lax',
      );
    });
  });

  describe('refusals, each with its error code', () => {
    let record: { id: string };
    let reader: Reader;
    before(async () => {
      record = harness.sealSample();
      reader = harness.reader();
      await reader.get(`/v1/config?messageId=${record.id}`);
      remember(reader);
    });

    it('invalid_email (400) for an address that is not one', async () => {
      assertError(await requestSmsCode(reader, record.id, { email: 'alice at example.com' }), 400, 'invalid_email');
      assertError(await requestSmsCode(reader, record.id, { email: 'alice@exa mple.com' }), 400, 'invalid_email');
    });

    it('invalid_mobile (400) for a number that is not valid or missing', async () => {
      assertError(await requestSmsCode(reader, record.id, { mobile: '12345' }), 400, 'invalid_mobile');
      assertError(await requestSmsCode(reader, record.id, { mobile: '+41 79' }), 400, 'invalid_mobile');
      assertError(await requestSmsCode(reader, record.id, { mobile: undefined }), 400, 'invalid_mobile');
    });

    it('unauthorized_user (403) for an address that is not a recipient, or a message that does not exist', async () => {
      assertError(await requestSmsCode(reader, record.id, { email: 'eve@example.com' }), 403, 'unauthorized_user');
      assertError(await requestSmsCode(reader, 'unknown-message', {}), 403, 'unauthorized_user');
    });

    it('matches recipients by normalised address: case of the domain, spaces, IDN', async () => {
      const idn = harness.seal.register({
        raw: 'Subject: x\n\nx\n',
        recipients: [{ email: 'zoe@xn--mller-kva.example', method: 'sms', mobile: '+41791112233' }],
      });
      const zoe = harness.reader();
      await zoe.get('/v1/config');
      const sent = await zoe.request('POST', '/v1/auth/code', {
        body: { messageId: idn.id, email: ' zoe@MÜLLER.example ', mobile: '+41791112233', method: 'sms' },
      });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const aliceUpper = await requestSmsCode(reader, record.id, { email: 'Alice@EXAMPLE.com' });
      assert.equal(aliceUpper.status, 200, JSON.stringify(aliceUpper.body));
    });

    it('forbidden_auth_method (403) when the recipient signs in the other way', async () => {
      assertError(
        await requestSmsCode(reader, record.id, { method: 'email', mobile: undefined }),
        403,
        'forbidden_auth_method',
      );
      assertError(await requestSmsCode(reader, record.id, { email: BOB.email }), 403, 'forbidden_auth_method');
    });

    it('email_and_mobile_mismatch (403) when the number is not the one on record for the address', async () => {
      assertError(
        await requestSmsCode(reader, record.id, { mobile: '+41797654321' }),
        403,
        'email_and_mobile_mismatch',
      );
    });

    it('incorrect_code (401) without any code, and for a wrong one', async () => {
      const fresh = harness.reader();
      await fresh.get('/v1/config');
      assertError(
        await fresh.request('POST', '/v1/auth/verify', { body: { code: '123456', rememberMe: false } }),
        401,
        'incorrect_code',
      );
      assert.equal((await requestSmsCode(reader, record.id)).status, 200);
      assertError(
        await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(await lastSmsCode()) } }),
        401,
        'incorrect_code',
      );
    });

    it('sends nothing for refused requests', async () => {
      const before = harness.sms.messages.length;
      await requestSmsCode(reader, record.id, { mobile: '+41797654321' });
      await requestSmsCode(reader, record.id, { email: 'eve@example.com' });
      assert.equal(harness.sms.messages.length, before);
    });

    it('401 on the reading routes without sign-in', async () => {
      assertError(await reader.get('/v1/message'), 401, 'unauthenticated');
      assertError(await reader.get('/v1/message/attachments/0'), 401, 'unauthenticated');
      assertError(await reader.get('/v1/message/files'), 401, 'unauthenticated');
      assertError(await harness.reader().get('/v1/message'), 401, 'unauthenticated');
    });
  });

  describe('brute force', () => {
    it('voids the code after 5 wrong tries: even the right code is then refused; only a new code helps', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      await requestSmsCode(reader, record.id);
      const code = await lastSmsCode();
      for (let i = 0; i < 4; i++) {
        const answer = await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(code) } });
        assertError(answer, 401, 'incorrect_code');
        assert.equal(answer.body.attemptsLeft, 4 - i, 'the error object says how many tries are left');
      }
      // The fifth wrong try voids the code, and says so; so does every later try, the right code included.
      const voided = await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(code) } });
      assertError(voided, 401, 'code_attempts_exceeded');
      assert.equal(voided.body.attemptsLeft, undefined);
      assertError(await reader.request('POST', '/v1/auth/verify', { body: { code } }), 401, 'code_attempts_exceeded');
      await requestSmsCode(reader, record.id);
      const next = await lastSmsCode();
      assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code: next } })).status, 200);
      remember(reader);
    });

    it('does not restore tries on a new code request: the count carries over to the replacing code', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      await requestSmsCode(reader, record.id);
      const first = await lastSmsCode();
      for (let i = 0; i < 3; i++) await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(first) } });
      await requestSmsCode(reader, record.id);
      const second = await lastSmsCode();
      const fourth = await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(second) } });
      assertError(fourth, 401, 'incorrect_code');
      assert.equal(fourth.body.attemptsLeft, 1, 'the tries left count those of the replaced code');
      // 3 + 2 = 5 wrong tries: the second code is void too.
      assertError(
        await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(second) } }),
        401,
        'code_attempts_exceeded',
      );
      assertError(
        await reader.request('POST', '/v1/auth/verify', { body: { code: second } }),
        401,
        'code_attempts_exceeded',
      );
    });

    it('counts parallel guesses one by one', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      await requestSmsCode(reader, record.id);
      const code = await lastSmsCode();
      const guesses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          reader.request('POST', '/v1/auth/verify', {
            body: { code: String((Number(code) + 1 + i) % 1e6).padStart(6, '0') },
          }),
        ),
      );
      assert.ok(guesses.every((g) => g.status === 401));
      assert.equal(
        guesses.filter((g) => g.body.errorCode === 'incorrect_code').length,
        4,
        'four wrong tries, then the code is void',
      );
      assert.deepEqual(
        guesses
          .filter((g) => g.body.errorCode === 'incorrect_code')
          .map((g) => g.body.attemptsLeft)
          .sort(),
        [1, 2, 3, 4],
      );
      assertError(await reader.request('POST', '/v1/auth/verify', { body: { code } }), 401, 'code_attempts_exceeded');
    });

    it('binds the code to its session: another session cannot use it', async () => {
      const record = harness.sealSample();
      const victim = harness.reader();
      await victim.get(`/v1/config?messageId=${record.id}`);
      await requestSmsCode(victim, record.id);
      const code = await lastSmsCode();
      const attacker = harness.reader();
      await attacker.get(`/v1/config?messageId=${record.id}`);
      assertError(await attacker.request('POST', '/v1/auth/verify', { body: { code } }), 401, 'incorrect_code');
      remember(victim);
      remember(attacker);
    });
  });

  describe('a reload on the code screen: /v1/config tells the pending code, /v1/auth/code/resend sends another', () => {
    it('tells the session its pending code (masked destination, never the code) and sends nothing for it', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      assert.equal(
        (await reader.get(`/v1/config?messageId=${record.id}`)).body.codePending,
        undefined,
        'no code asked for yet',
      );
      assert.equal((await requestSmsCode(reader, record.id)).status, 200);
      const code = await lastSmsCode();
      const sent = harness.sms.messages.length;
      const config = await reader.get(`/v1/config?messageId=${record.id}`);
      assert.equal(config.status, 200);
      const pending = config.body.codePending;
      assert.deepEqual(
        { ...pending, sentAt: undefined, expiresIn: undefined },
        {
          method: 'sms',
          destination: '+41*******67',
          email: ALICE.email,
          sentAt: undefined,
          expiresIn: undefined,
          attemptsLeft: 5,
        },
      );
      assert.ok(pending.expiresIn > 890 && pending.expiresIn <= 900, String(pending.expiresIn));
      assert.ok(Math.abs(Date.parse(pending.sentAt) - Date.now()) < 10_000);
      assert.ok(!JSON.stringify(config.body).includes(code) && !JSON.stringify(config.body).includes(ALICE.mobile));
      assert.equal(harness.sms.messages.length, sent, 'the reload sent no SMS');
      // Only to this session, only for this message.
      assert.equal(
        (await (await openedLink(record.id)).get(`/v1/config?messageId=${record.id}`)).body.codePending,
        undefined,
      );
      assert.equal((await reader.get(`/v1/config?messageId=${harness.sealSample().id}`)).body.codePending, undefined);
      // Gone once signed in.
      assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
      assert.equal((await reader.get(`/v1/config?messageId=${record.id}`)).body.codePending, undefined);
      remember(reader);
    });

    it('sends a new code to the same number without retyping it, also after the code was voided', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      assertError(
        await reader.request('POST', '/v1/auth/code/resend', { body: { messageId: record.id } }),
        404,
        'not_found',
      );
      await requestSmsCode(reader, record.id);
      const first = await lastSmsCode();
      for (let i = 0; i < 5; i++) await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(first) } });
      assert.equal(
        (await reader.get(`/v1/config?messageId=${record.id}`)).body.codePending,
        undefined,
        'a void code is not pending',
      );
      const before = harness.sms.messages.length;
      const resent = await reader.request('POST', '/v1/auth/code/resend', { body: { messageId: record.id } });
      assert.equal(resent.status, 200, JSON.stringify(resent.body));
      assert.deepEqual(resent.body, { method: 'sms', codeLength: 6, expiresIn: 900 });
      assert.equal(harness.sms.messages.length, before + 1);
      assert.equal(harness.sms.messages.at(-1)!.to, ALICE.mobile);
      const second = await lastSmsCode();
      assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code: second } })).status, 200);
      remember(reader);
    });

    it('needs the CSRF token and a code of this session for this message', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      await requestSmsCode(reader, record.id);
      assert.equal(
        (await reader.request('POST', '/v1/auth/code/resend', { body: { messageId: record.id }, csrf: null })).status,
        403,
      );
      assertError(
        await reader.request('POST', '/v1/auth/code/resend', { body: { messageId: harness.sealSample().id } }),
        404,
        'not_found',
      );
    });
  });

  describe('stored codes: replaced by a resend, kept only as a keyed hash, bound to their message', () => {
    /** Requests codes until one differs from `previous` (two equal random codes: one in a million). */
    async function newCodeFor(reader: Reader, messageId: string, previous?: string): Promise<string> {
      for (let i = 0; i < 3; i++) {
        const sent = await requestSmsCode(reader, messageId);
        assert.equal(sent.status, 200, JSON.stringify(sent.body));
        const code = await lastSmsCode();
        if (code !== previous) return code;
      }
      return assert.fail('the same code three times');
    }
    const sessionRow = (reader: Reader) =>
      harness.auth.database.db
        .withSchema('auth')
        .selectFrom('sessions')
        .selectAll()
        .where('token_hash', '=', tokenHash(reader.token!))
        .executeTakeFirstOrThrow();

    it('a resend replaces the earlier code: the first is then code_replaced, the second signs in', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      const first = await newCodeFor(reader, record.id);
      const second = await newCodeFor(reader, record.id, first);
      assertError(await reader.request('POST', '/v1/auth/verify', { body: { code: first } }), 401, 'code_replaced');
      const verified = await reader.request('POST', '/v1/auth/verify', { body: { code: second } });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      remember(reader);
    });

    it('stores only the HMAC of the code under the key derived from AUTH_SECRET, never the code itself', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      const code = await newCodeFor(reader, record.id);
      const row = await sessionRow(reader);
      assert.match(row.code_hmac!, /^[0-9a-f]{64}$/);
      for (const [column, value] of Object.entries(row)) {
        const text = value instanceof Date ? value.toISOString() : String(value);
        assert.ok(!text.includes(code), `${column} holds the code in clear: ${text}`);
      }
      // Without the key, a copy of the table gives nothing: not even a plain hash over the 10^6 codes.
      assert.notEqual(row.code_hmac, createHash('sha256').update(code).digest('hex'));
      const bound = [row.id, 'sign_in', 'sms', record.id, ALICE.email, ALICE.mobile, code].join('\n');
      assert.equal(
        row.code_hmac,
        createHmac('sha256', deriveKeys(TEST_AUTH_SECRET).codeKey).update(bound).digest('hex'),
      );
      assert.deepEqual(
        [row.code_message_id, row.code_email, row.code_destination],
        [record.id, ALICE.email, ALICE.mobile],
      );
    });

    it('binds the code to its message: pointed at another message in the database, the right code fails', async () => {
      const x = harness.sealSample();
      const y = harness.sealSample();
      const reader = await openedLink(x.id);
      const code = await newCodeFor(reader, x.id);
      await harness.auth.database.db
        .withSchema('auth')
        .updateTable('sessions')
        .set({ code_message_id: y.id })
        .where('token_hash', '=', tokenHash(reader.token!))
        .execute();
      assertError(await reader.request('POST', '/v1/auth/verify', { body: { code } }), 401, 'incorrect_code');
      assertError(await reader.get('/v1/message'), 401, 'unauthenticated');
    });

    it('signs in for the message the code was for: a code for X, replaced by one for Y, does not open X', async () => {
      const x = harness.sealSample();
      const y = harness.sealSample();
      const reader = await openedLink(x.id);
      const forX = await newCodeFor(reader, x.id);
      const forY = await newCodeFor(reader, y.id, forX);
      assertError(await reader.request('POST', '/v1/auth/verify', { body: { code: forX } }), 401, 'code_replaced');
      const verified = await reader.request('POST', '/v1/auth/verify', { body: { code: forY } });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      assert.equal(verified.body.messageId, y.id);
      assert.equal((await reader.get('/v1/message')).body.id, y.id);
      remember(reader);
    });
  });

  describe('sign-in by email code', () => {
    async function lastEmailCode(): Promise<string> {
      const outbox = join(harness.auth.config.dataDir, 'outbox');
      const files = (await readdir(outbox)).filter((name) => name.endsWith('.eml')).sort();
      const mail = await readFile(join(outbox, files.at(-1)!), 'utf8');
      assert.match(mail, /^To: bob@example\.com$/m);
      const code = /Your Sealpost code is (\d{6})/.exec(mail)?.[1] ?? assert.fail('no code in the mail');
      secrets.add(code);
      return code;
    }

    it('sends the code to the address on record (outbox without OUTBOUND_SMTP_URL) and signs in with it', async () => {
      const record = harness.sealSample();
      const reader = harness.reader();
      await reader.get(`/v1/config?messageId=${record.id}`);
      const sms = harness.sms.messages.length;
      const sent = await reader.request('POST', '/v1/auth/code', {
        body: { messageId: record.id, email: 'BOB@example.com', method: 'email' },
      });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assert.equal(sent.body.method, 'email');
      assert.equal(harness.sms.messages.length, sms);
      const verified = await reader.request('POST', '/v1/auth/verify', {
        body: { code: await lastEmailCode(), rememberMe: false },
      });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      assert.equal(verified.body.email, BOB.email);
      remember(reader);
    });

    it('invalid_code_or_email (401) for a wrong email code', async () => {
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      await reader.request('POST', '/v1/auth/code', {
        body: { messageId: record.id, email: BOB.email, method: 'email' },
      });
      const answer = await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(await lastEmailCode()) } });
      assertError(answer, 401, 'invalid_code_or_email');
      assert.equal(answer.body.attemptsLeft, 4);
    });
  });

  describe('what the service exposes', () => {
    it('counts sent SMS in sent_sms_messages_total and every route in the HTTP metrics', async () => {
      const metrics = await (await fetch(`${harness.auth.metricsUrl}/metrics`)).text();
      const sent = Number(/^sent_sms_messages_total\{[^}]*\} (\d+)$/m.exec(metrics)?.[1]);
      assert.equal(sent, harness.sms.messages.length);
      assert.match(metrics, /^http_requests_total\{[^}]*operation="POST \/v1\/auth\/code",code="200"[^}]*\} \d+$/m);
      assert.match(metrics, /^http_requests_total\{[^}]*operation="POST \/v1\/auth\/verify",code="401"[^}]*\} \d+$/m);
      assert.match(
        metrics,
        /^http_request_duration_seconds_count\{[^}]*operation="GET \/v1\/config",code="200"[^}]*\} \d+$/m,
      );
    });

    it("counts codes by method and provider, sign-ins by outcome, for operators' alerts and dashboard", async () => {
      const value = (page: string, name: string, labels: string) =>
        Number(new RegExp(`^${name}\\{${labels}[^}]*\\} (\\d+)$`, 'm').exec(page)?.[1] ?? 0);
      const before = await (await fetch(`${harness.auth.metricsUrl}/metrics`)).text();
      const record = harness.sealSample();
      const reader = await openedLink(record.id);
      assert.equal((await requestSmsCode(reader, record.id)).status, 200);
      const code = await lastSmsCode();
      assertError(
        await reader.request('POST', '/v1/auth/verify', { body: { code: wrong(code), rememberMe: false } }),
        401,
        'incorrect_code',
      );
      assert.equal(
        (await reader.request('POST', '/v1/auth/verify', { body: { code, rememberMe: false } })).status,
        200,
      );
      const after = await (await fetch(`${harness.auth.metricsUrl}/metrics`)).text();
      const delta = (name: string, labels: string) => value(after, name, labels) - value(before, name, labels);
      assert.equal(delta('auth_codes_sent_total', 'method="sms",provider="http"'), 1);
      assert.equal(delta('auth_sign_ins_total', 'outcome="incorrect_code"'), 1);
      assert.equal(delta('auth_sign_ins_total', 'outcome="signed_in"'), 1);
      harness.sms.failWith(500);
      try {
        const refused = await requestSmsCode(await openedLink(record.id), record.id);
        assert.equal(refused.status, 502);
      } finally {
        harness.sms.failWith(undefined);
      }
      const failed = await (await fetch(`${harness.auth.metricsUrl}/metrics`)).text();
      assert.equal(
        value(failed, 'auth_codes_failed_total', 'method="sms",provider="http"') -
          value(before, 'auth_codes_failed_total', 'method="sms",provider="http"'),
        1,
      );
    });

    it('never writes a code, a session token or its hash to the log', async () => {
      assert.ok(secrets.size > 20, `the tests above should have seen codes and tokens (${secrets.size})`);
      const log = harness.auth.logs.map((line) => JSON.stringify(line)).join('\n');
      assert.ok(harness.auth.logs.length > 50);
      for (const secret of secrets) {
        // A code is six digits: as a word of its own, not inside a longer number (a timestamp) or hex string.
        const found = /^\d+$/.test(secret)
          ? new RegExp(`(?<![0-9a-z])${secret}(?![0-9a-z])`, 'i').test(log)
          : log.includes(secret);
        assert.ok(!found, `the log holds a secret: ${secret}`);
      }
      assert.match(log, /code sent by SMS/);
    });
  });
});

describe('auth service: code expiry', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SMS_CODE_EXPIRATION: '2s' } });
  });
  after(async () => {
    await harness?.stop();
  });

  it('answers expired_code (401) to the right code past SMS_CODE_EXPIRATION, incorrect_code to a wrong', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    await reader.get(`/v1/config?messageId=${record.id}`);
    await reader.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    const code = harness.sms.lastCodeTo(ALICE.mobile);
    harness.clock.advance(2200);
    assertError(
      await reader.request('POST', '/v1/auth/verify', { body: { code: code === '000000' ? '000001' : '000000' } }),
      401,
      'incorrect_code',
    );
    assertError(await reader.request('POST', '/v1/auth/verify', { body: { code } }), 401, 'expired_code');
    // Used up, and it stays expired: the page keeps saying so until a new code is requested.
    assertError(await reader.request('POST', '/v1/auth/verify', { body: { code } }), 401, 'expired_code');
    const config = await reader.get(`/v1/config?messageId=${record.id}`);
    assert.equal(config.body.codePending, undefined, 'an expired code is not offered for a reload');
  });
});

describe('auth service: cookies over HTTPS', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({
      env: { AUTH_PUBLIC_URL: 'https://reader.example.test', SMS_LIMIT_NUMBER_INTERVAL: '0s' },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  it('marks the cookies Secure and uses the __Host- prefix when AUTH_PUBLIC_URL is https', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    const config = await reader.get(`/v1/config?messageId=${record.id}`);
    assert.match(
      config.setCookie!,
      /^__Host-sealpost_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
    );
    await reader.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    const verified = await reader.request('POST', '/v1/auth/verify', {
      body: { code: harness.sms.lastCodeTo(ALICE.mobile), rememberMe: true },
    });
    assert.match(
      verified.setCookie!,
      /^__Host-sealpost_session=[A-Za-z0-9_-]{43}; Max-Age=2592000; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
    );
    assert.equal((await reader.get('/v1/message')).status, 200);
    const out = await reader.get('/logout');
    assert.equal(out.setCookie, '__Host-sealpost_session=; Max-Age=-1; Path=/; HttpOnly; Secure; SameSite=Lax');
  });

  it('ignores a cookie under the plain-http name', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    await signInAlice(harness, reader, record.id);
    const plain = harness.reader();
    plain.cookie = `sealpost_session=${reader.token}`;
    assertError(await plain.get('/v1/message'), 401, 'unauthenticated');
  });
});
