import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { refuseConnections } from '../../../test/support/db-faults.ts';
import type { SessionRow } from '../tables.ts';
import { SESSION_CHANGES_CHANNEL, SessionCache } from './cache.ts';
import { tokenHash } from './store.ts';

// Far longer than any wait below: a row that is not forgotten when it changes stays in the cache.
const env = { SESSION_CACHE_TTL: '1h', SMS_LIMIT_NUMBER_INTERVAL: '0s' };
const LISTENER = `sealpost listen ${SESSION_CHANGES_CHANNEL}`;

async function metric(harness: AuthHarness, name: string, label = ''): Promise<number> {
  const page = await (await fetch(`${harness.auth.metricsUrl}/metrics`)).text();
  const line = page.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label));
  return line ? Number(line.split(' ').at(-1)) : 0;
}
const hits = (harness: AuthHarness) => metric(harness, 'auth_session_cache_lookups_total', 'result="hit"');
const serving = async (harness: AuthHarness) => (await metric(harness, 'auth_session_cache_serving')) === 1;

/** Polls (bounded) until `check` holds. */
async function within(timeoutMs: number, what: string, check: () => Promise<boolean>): Promise<void> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await sleep(20)) if (await check()) return;
  assert.fail(`not within ${timeoutMs} ms: ${what}`);
}

/** The same browser (its cookie) pointed at another instance. */
function sameCookieOn(harness: AuthHarness, reader: Reader): Reader {
  const other = harness.reader();
  other.cookie = reader.cookie;
  return other;
}

/** A GET served from the cache: the instance counts one more hit. */
async function getFromCache(harness: AuthHarness, reader: Reader, path: string) {
  const before = await hits(harness);
  const response = await reader.get(path);
  assert.equal(await hits(harness), before + 1, `${path} was served from the session cache`);
  return response;
}

/** Alice signed in to a sample message, whose second read came from the session cache. */
async function aliceReadingFromCache(harness: AuthHarness): Promise<{ alice: Reader; path: string }> {
  const record = harness.sealSample();
  const alice = harness.reader();
  await signInAlice(harness, alice, record.id);
  const path = `/v1/message?messageId=${record.id}`;
  assert.equal((await alice.get(path)).status, 200);
  assert.equal((await getFromCache(harness, alice, path)).status, 200);
  return { alice, path };
}

/** Changes a session row without the trigger, so that no instance hears of it: only a read sees it. */
async function silently(harness: AuthHarness, token: string, expiresAt: Date): Promise<void> {
  await harness.auth.database.db.transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx);
    await trx
      .withSchema('auth')
      .updateTable('sessions')
      .set({ expires_at: expiresAt })
      .where('token_hash', '=', tokenHash(token))
      .execute();
  });
}

describe('the session cache across two instances on one database', () => {
  let one: AuthHarness;
  let two: AuthHarness;
  before(async () => {
    one = await startAuthHarness({ env });
    two = await startAuthHarness({ env, databaseUrl: one.auth.config.databaseUrl, seal: one.seal, sms: one.sms });
    await within(5000, 'both instances serve from their caches', async () => (await serving(one)) && serving(two));
  });
  after(async () => {
    await two?.stop();
    await one?.stop();
  });

  it('refuses a token on the other instance right after it signed out on one', async () => {
    const record = one.sealSample();
    const alice = one.reader();
    await signInAlice(one, alice, record.id);
    const elsewhere = sameCookieOn(two, alice);
    assert.equal((await elsewhere.get(`/v1/message?messageId=${record.id}`)).status, 200);
    assert.equal((await getFromCache(two, elsewhere, `/v1/message?messageId=${record.id}`)).status, 200);

    assert.equal((await alice.get('/logout')).status, 200);
    await within(1000, 'the other instance refuses the signed-out token', async () => {
      return (await elsewhere.get(`/v1/message?messageId=${record.id}`)).status === 401;
    });
  });

  it('lets the token a sign-in replaced open nothing on the other instance', async () => {
    const record = one.sealSample();
    const alice = one.reader();
    await alice.get(`/v1/config?messageId=${record.id}`);
    // The token before sign-in, as someone who planted or saw it holds it, at the other instance.
    const before = sameCookieOn(two, alice);
    assert.equal((await before.get(`/v1/config?messageId=${record.id}`)).setCookie, undefined);
    const known = await getFromCache(two, before, `/v1/config?messageId=${record.id}`);
    assert.equal(known.body.signedIn, false);

    await signInAlice(one, alice, record.id);
    assert.notEqual(alice.cookie, before.cookie, 'sign-in gave a new token');
    // Served from a stale copy, the old token would name the row that is signed in now.
    await within(1000, 'the replaced token opens nothing on the other instance', async () => {
      return (await before.get(`/v1/message?messageId=${record.id}`)).status === 401;
    });
    const config = await before.get(`/v1/config?messageId=${record.id}`);
    assert.equal(config.body.signedIn, false);
    assert.ok(config.setCookie, 'the replaced token is unknown: a new session begins');
    assert.equal((await sameCookieOn(two, alice).get(`/v1/message?messageId=${record.id}`)).status, 200);
  });

  it('reads PostgreSQL while its LISTEN connection is lost, and serves from the cache once it is back', async () => {
    const record = one.sealSample();
    const alice = one.reader();
    await signInAlice(one, alice, record.id);
    const token = alice.token!;
    const path = `/v1/message?messageId=${record.id}`;
    const reader = sameCookieOn(two, alice);
    const ended = new Date('2001-01-01T00:00:00Z');
    const { expires_at: end } = await two.auth.database.db
      .withSchema('auth')
      .selectFrom('sessions')
      .select('expires_at')
      .where('token_hash', '=', tokenHash(token))
      .executeTakeFirstOrThrow();

    // Serving: a change nobody announces is not seen (this is what the trigger is for).
    assert.equal((await reader.get(path)).status, 200);
    await silently(two, token, ended);
    assert.equal((await getFromCache(two, reader, path)).status, 200);
    await silently(two, token, end);

    // The LISTEN connections are cut and cannot come back; the pools keep the connections they hold.
    await two.auth.database.ping();
    const restore = await refuseConnections(one.auth.config.databaseUrl!, { applicationName: LISTENER });
    try {
      await within(1000, 'the cache stops serving', async () => !(await serving(two)));
      await silently(two, token, ended);
      assertError(await reader.get(path), 401, 'unauthenticated');
      await silently(two, token, end);
      assert.equal((await reader.get(path)).status, 200);
      assert.equal((await reader.get(path)).status, 200);
      // Nothing read while not listening is kept, nor does it outlive the gap.
      await silently(two, token, ended);
      assertError(await reader.get(path), 401, 'unauthenticated');
    } finally {
      await restore();
    }
    await within(10_000, 'listening again', () => serving(two));
    assertError(await reader.get(path), 401, 'unauthenticated');
    await silently(two, token, end);
    assert.equal((await reader.get(path)).status, 200);
    assert.equal((await getFromCache(two, reader, path)).status, 200);
  });
});

describe('the session cache of the instance that writes', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env });
    await within(5000, 'the cache serves', () => serving(harness));
    // Only the instance's own forgetting is left: no announcement reaches it.
    await sql`alter table auth.sessions disable trigger session_changed`.execute(harness.auth.database.db);
  });
  after(async () => {
    await harness?.stop();
  });

  it('sees its own changes at once: a code asked for, a sign-in, a sign-out', async () => {
    const record = harness.sealSample();
    const alice = harness.reader();
    const config = `/v1/config?messageId=${record.id}`;
    await alice.get(config); // a new session
    await alice.get(config); // read, and kept
    assert.equal((await getFromCache(harness, alice, config)).body.codePending, undefined);

    const sent = await alice.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal((await alice.get(config)).body.codePending?.method, 'sms');
    assert.equal((await getFromCache(harness, alice, config)).body.codePending?.method, 'sms');

    const before = sameCookieOn(harness, alice);
    const verified = await alice.request('POST', '/v1/auth/verify', {
      body: { code: harness.sms.lastCodeTo(ALICE.mobile) },
    });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    assertError(await before.get(`/v1/message?messageId=${record.id}`), 401, 'unauthenticated');
    assert.equal((await alice.get(`/v1/message?messageId=${record.id}`)).status, 200);
    assert.equal((await getFromCache(harness, alice, `/v1/message?messageId=${record.id}`)).status, 200);

    const signedIn = sameCookieOn(harness, alice);
    await alice.get('/logout');
    assertError(await signedIn.get(`/v1/message?messageId=${record.id}`), 401, 'unauthenticated');
  });

  it('reads the session from PostgreSQL, not the cache, for a request that changes state', async () => {
    const record = harness.sealSample();
    const alice = harness.reader();
    const config = `/v1/config?messageId=${record.id}`;
    await alice.get(config);
    await alice.get(config);
    await silently(harness, alice.token!, new Date('2001-01-01T00:00:00Z'));
    // Unheard (no trigger here), so a GET still goes by the cached row; a POST must not.
    assert.equal((await getFromCache(harness, alice, config)).setCookie, undefined);
    const sent = await alice.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    assertError(sent, 403, 'csrf_token_invalid');
  });
});

describe('the session cache and the idle timeout', () => {
  let harness: AuthHarness;
  before(async () => {
    // Steps of 40 s against 60 s: the test clock also runs in real time, so a slow machine cannot end it early.
    harness = await startAuthHarness({ env: { ...env, SESSION_IDLE_TIMEOUT: '1m' } });
    await within(5000, 'the cache serves', () => serving(harness));
  });
  after(async () => {
    await harness?.stop();
  });

  it('records the use of a session it serves, so that one in use outlives SESSION_IDLE_TIMEOUT', async () => {
    const { alice, path } = await aliceReadingFromCache(harness);
    let used = 0;
    for (let step = 0; step < 4; step++) {
      harness.clock.advance(40_000);
      used = harness.clock.now();
      assert.equal((await alice.get(path)).status, 200, `in use after ${(step + 1) * 40} s`);
    }
    const [row] = await harness.auth.database.db
      .withSchema('auth')
      .selectFrom('sessions')
      .select('last_seen_at')
      .where('token_hash', '=', tokenHash(alice.token!))
      .execute();
    const lastSeen = row!.last_seen_at.getTime();
    assert.ok(lastSeen >= used && lastSeen <= harness.clock.now(), 'the last use is recorded');
    assert.equal((await alice.get(path)).status, 200);
    assert.equal((await getFromCache(harness, alice, path)).status, 200);
    harness.clock.advance(61_000);
    assertError(await alice.get(path), 401, 'unauthenticated');
  });
});

describe('the session cache on PGlite', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env, pglite: true });
    await within(5000, 'the cache serves', () => serving(harness));
  });
  after(async () => {
    await harness?.stop();
  });

  it('hears a change by any statement before that statement returns', async () => {
    const { alice, path } = await aliceReadingFromCache(harness);
    await harness.auth.database.db
      .withSchema('auth')
      .deleteFrom('sessions')
      .where('token_hash', '=', tokenHash(alice.token!))
      .execute();
    assertError(await alice.get(path), 401, 'unauthenticated');
  });
});

describe('the session cache, a read at a time', () => {
  const row = (id: string) => ({ id, token_hash: 'h' }) as SessionRow;
  /** Loads that settle when told, in any order. */
  function loads() {
    const pending: Array<(row: SessionRow | undefined) => void> = [];
    let settled = 0;
    return {
      count: () => pending.length - settled,
      load: () => new Promise<SessionRow | undefined>((resolve) => pending.push(resolve)),
      settle: (index: number, value: SessionRow | undefined) => {
        settled++;
        pending[index]!(value);
      },
    };
  }

  it('does not keep a row read while it was announced changed, and shares a read under way', async () => {
    const cache = new SessionCache({ maxEntries: 10, ttlMs: 3600_000 });
    cache.startServing();
    const db = loads();
    const first = cache.get('h', db.load);
    const second = cache.get('h', db.load);
    assert.equal(db.count(), 1, 'one read for both');
    cache.forget('h');
    const third = cache.get('h', db.load);
    assert.equal(db.count(), 2, 'a lookup after the announcement does not join the earlier read');
    // The read begun after the change answers first; the earlier one, holding the old row, last.
    db.settle(1, row('after'));
    assert.equal((await third)?.id, 'after');
    db.settle(0, row('before'));
    assert.equal((await first)?.id, 'before');
    assert.equal((await second)?.id, 'before');
    assert.equal((await cache.get('h', db.load))?.id, 'after', 'the old row did not replace the new one');
    assert.equal(db.count(), 0);
  });

  it('keeps nothing read across a loss of LISTEN, nor while it lasts', async () => {
    const cache = new SessionCache({ maxEntries: 10, ttlMs: 3600_000 });
    cache.startServing();
    const db = loads();
    const under = cache.get('h', db.load);
    cache.stopServing();
    db.settle(0, row('across the loss'));
    await under;
    const meanwhile = cache.get('h', db.load);
    db.settle(1, row('meanwhile'));
    await meanwhile;
    cache.startServing();
    const after = cache.get('h', db.load);
    assert.equal(db.count(), 1, 'read again once listening');
    db.settle(2, row('after'));
    assert.equal((await after)?.id, 'after');
  });
});
