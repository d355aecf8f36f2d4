import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../../../test/support/auth-assert.ts';
import { signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import { tokenHash } from './store.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function sessionRows(harness: AuthHarness, token: string): Promise<number> {
  const rows = await harness.auth.database.db
    .withSchema('auth')
    .selectFrom('sessions')
    .select('id')
    .where('token_hash', '=', tokenHash(token))
    .execute();
  return rows.length;
}

/** Polls (bounded) until `check` holds. */
async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await sleep(100)) {
    if (await check()) return;
  }
  assert.fail(`not within ${timeoutMs} ms: ${what}`);
}

describe('sessions: idle timeout and cleanup', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({
      env: { SESSION_IDLE_TIMEOUT: '1s', SESSION_CLEANUP_INTERVAL: '200ms', SMS_LIMIT_NUMBER_INTERVAL: '0s' },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  it('ends browser sessions idle for SESSION_IDLE_TIMEOUT, keeps remember-me ones, deletes the ended row', async () => {
    const record = harness.sealSample();
    const browser = harness.reader();
    await signInAlice(harness, browser, record.id, false);
    const remembered = harness.reader();
    await signInAlice(harness, remembered, record.id, true);
    assert.equal((await browser.get('/v1/message')).status, 200);
    harness.clock.advance(1300);
    assertError(await browser.get('/v1/message'), 401, 'unauthenticated');
    assert.equal((await remembered.get('/v1/message')).status, 200);
    await eventually(async () => (await sessionRows(harness, browser.token!)) === 0, 'the idle session row is deleted');
    assert.equal(await sessionRows(harness, remembered.token!), 1);
  });

  it('deletes rate-limit records once they are older than the hour they count for', async () => {
    const table = harness.auth.database.db.withSchema('auth');
    await table
      .insertInto('code_sends')
      .values([
        { destination: 'sms:+41790000001', client: '192.0.2.1', sent_at: new Date(Date.now() - 2 * 3600_000) },
        { destination: 'sms:+41790000002', client: '192.0.2.1', sent_at: new Date() },
      ])
      .execute();
    const left = async () =>
      (await table.selectFrom('code_sends').select('destination').where('client', '=', '192.0.2.1').execute()).map(
        (row) => row.destination,
      );
    await eventually(async () => (await left()).length === 1, 'the old record is deleted');
    assert.deepEqual(await left(), ['sms:+41790000002']);
  });

  it('ignores an unknown or malformed session cookie and starts a new session', async () => {
    for (const cookie of [`sealpost_session=${'A'.repeat(43)}`, 'sealpost_session=../../etc', 'sealpost_session=']) {
      const reader = harness.reader();
      reader.cookie = cookie;
      assertError(await reader.get('/v1/message'), 401, 'unauthenticated');
      const config = await reader.get('/v1/config');
      assert.match(config.setCookie!, /^sealpost_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
    }
  });
});

describe('sessions: absolute timeout', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SESSION_ABSOLUTE_TIMEOUT: '2s' } });
  });
  after(async () => {
    await harness?.stop();
  });

  it('ends a browser session SESSION_ABSOLUTE_TIMEOUT after sign-in, however busy it is', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    await signInAlice(harness, reader, record.id);
    assert.equal((await reader.get('/v1/message')).status, 200);
    harness.clock.advance(800);
    assert.equal((await reader.get('/v1/message')).status, 200);
    harness.clock.advance(1400);
    assertError(await reader.get('/v1/message'), 401, 'unauthenticated');
  });
});
