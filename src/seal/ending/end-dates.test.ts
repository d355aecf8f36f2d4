import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../kernel/db/index.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import {
  postSeal,
  rawMessage,
  standInEnv,
  startSealOnStandIn,
  startStandIn,
  TEST_MASTER_KEY,
  type StandIn,
} from '../../../test/support/seal.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { sealService } from '../service.ts';

/**
 * docs/specification.md#end-dates on the seal service, against the IPFS Cluster stand-in: an end date from
 * X-Sealpost-Expires (held to SEAL_MAX_EXPIRY, SEAL_DEFAULT_EXPIRY without one), 410 from the moment it passes,
 * the key destroyed and the content unpinned by the pass, also after a restart and once across two instances.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const HOUR = 60 * 60 * 1000;

const call = (seal: ServiceUnderTest, path: string, init: RequestInit & { token?: string } = {}) =>
  fetch(`${seal.url}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${init.token ?? seal.serviceToken}`,
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
  });

async function sealOne(seal: ServiceUnderTest, headers: string[] = [], parts: { to?: string } = {}) {
  const response = await postSeal(
    { url: seal.url, serviceToken: seal.serviceToken },
    rawMessage({ headers, ...parts }),
  );
  assert.equal(response.status, 201, await response.clone().text());
  return (await response.json()) as { id: string; cid: string; expiresAt?: string };
}

type Db = { db: Database['db'] };

async function row({ db }: Db, id: string) {
  const { rows } = await sql<{ wrapped_key: string | null; ended_at: Date | null; end_reason: string | null }>`
    select wrapped_key, ended_at, end_reason from seal.sealed_messages where id = ${id}`.execute(db);
  return rows[0]!;
}

async function endWork({ db }: Db, id: string) {
  const { rows } = await sql<{ cluster: string; attempts: number; error: string | null }>`
    select cluster, attempts, error from seal.seal_end_work where sealed_id = ${id}`.execute(db);
  return rows;
}

/** A metric's value on the service's /metrics (0 when absent). */
async function metric(seal: ServiceUnderTest, series: string): Promise<number> {
  const page = await (await fetch(`${seal.metricsUrl}/metrics`)).text();
  const line = page.split('\n').find((entry) => entry.startsWith(`${series} `) || entry.startsWith(`${series}{`));
  const match = line && new RegExp(`^${series.replace(/[{}"=]/g, '.')}(?:\\{[^}]*\\})? (\\S+)$`).exec(line);
  return match ? Number(match[1]) : 0;
}

const endPass = (seal: ServiceUnderTest) => seal.service.workers!.ender!.runOnce();

describe('end dates: X-Sealpost-Expires, SEAL_DEFAULT_EXPIRY and SEAL_MAX_EXPIRY', () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  let capped: ServiceUnderTest;

  before(async () => {
    standIn = await startStandIn();
    // A pass that never runs by itself here: the tests show what holds before it and run it when they need it.
    seal = await startSealOnStandIn(standIn, { SEAL_END_INTERVAL: '1h' });
    capped = await startSealOnStandIn(standIn, {
      SEAL_END_INTERVAL: '1h',
      SEAL_DEFAULT_EXPIRY: '1h',
      SEAL_MAX_EXPIRY: '2d',
    });
  });
  after(async () => {
    await seal?.stop();
    await capped?.stop();
    await standIn?.close();
  });

  it('reads a message with X-Sealpost-Expires: 2s, then answers 410 message_expired before the pass ran', async () => {
    const sealed = await sealOne(seal, ['X-Sealpost-Expires: 2s']);
    const view = await (await call(seal, `/v1/sealed/${sealed.id}`)).json();
    assert.equal(sealed.expiresAt, view.expiresAt);
    const life = Date.parse(view.expiresAt) - Date.parse(view.sealedAt);
    assert.ok(Math.abs(life - 2000) < 500, `a life of ${life} ms`);
    assert.equal(view.end, undefined);
    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/content`)).status, 200);

    await sleep(Math.max(0, Date.parse(view.expiresAt) - Date.now()) + 200);
    const content = await call(seal, `/v1/sealed/${sealed.id}/content`);
    assert.equal(content.status, 410);
    const error = await content.json();
    assert.equal(error.errorCode, 'message_expired');
    assert.equal(error.endedAt, view.expiresAt);
    assert.equal(error.contact, 'alice@sender.example');
    const recipient = await call(seal, `/v1/sealed/${sealed.id}/recipients/bob@rcpt.example`);
    assert.equal(recipient.status, 410);
    assert.equal((await recipient.json()).errorCode, 'message_expired');
    assert.deepEqual((await (await call(seal, `/v1/sealed/${sealed.id}`)).json()).end, {
      reason: 'expired',
      at: view.expiresAt,
    });
    const ended = await call(seal, '/v1/sealed/ended', {
      method: 'POST',
      body: JSON.stringify({ ids: [sealed.id, randomUUID()] }),
    });
    assert.deepEqual(await ended.json(), {
      ended: [{ id: sealed.id, end: { reason: 'expired', at: view.expiresAt } }],
    });
    // Enforced at once; the key is destroyed by the pass.
    assert.notEqual((await row(seal.database, sealed.id)).wrapped_key, null);
    assert.ok(standIn.pins().has(sealed.cid));

    const before = await metric(seal, 'sealed_messages_expired_total');
    await endPass(seal);
    const after = await row(seal.database, sealed.id);
    assert.equal(after.wrapped_key, null, 'the key is destroyed');
    assert.equal(after.end_reason, 'expired');
    assert.equal(after.ended_at?.toISOString(), view.expiresAt);
    assert.deepEqual(await endWork(seal.database, sealed.id), [], 'the unpin is done');
    assert.equal(standIn.pins().has(sealed.cid), false, 'the cluster no longer pins the content');
    assert.equal(await metric(seal, 'sealed_messages_expired_total'), before + 1);
    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/content`)).status, 410);
  });

  it('refuses a malformed X-Sealpost-Expires, and a time already past, with 400 validation_failed', async () => {
    for (const value of ['soon', '-5m', '2027-02-30T10:00:00Z', '2001-01-01T00:00:00Z']) {
      const adds = standIn.requests.filter((request) => request.path === '/add').length;
      const response = await postSeal(
        { url: seal.url, serviceToken: seal.serviceToken },
        rawMessage({ headers: [`X-Sealpost-Expires: ${value}`] }),
      );
      assert.equal(response.status, 400, value);
      const error = await response.json();
      assert.equal(error.errorCode, 'validation_failed');
      assert.ok(error.message.includes(JSON.stringify(value)), error.message);
      assert.equal(standIn.requests.filter((request) => request.path === '/add').length, adds, 'nothing added');
    }
  });

  it('gives no end date without the header and without SEAL_DEFAULT_EXPIRY or SEAL_MAX_EXPIRY', async () => {
    const sealed = await sealOne(seal);
    assert.equal(sealed.expiresAt, undefined);
    assert.equal((await (await call(seal, `/v1/sealed/${sealed.id}`)).json()).expiresAt, undefined);
  });

  it('applies SEAL_DEFAULT_EXPIRY without the header and holds every ask to SEAL_MAX_EXPIRY', async () => {
    const lifeOf = async (headers: string[]) => {
      const sealed = await sealOne(capped, headers);
      const view = await (await call(capped, `/v1/sealed/${sealed.id}`)).json();
      assert.equal(sealed.expiresAt, view.expiresAt);
      return Date.parse(view.expiresAt) - Date.parse(view.sealedAt);
    };
    const near = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) < 2000, `${actual}`);
    near(await lifeOf([]), HOUR);
    near(await lifeOf(['X-Sealpost-Expires: 30m']), HOUR / 2);
    near(await lifeOf(['X-Sealpost-Expires: 1d12h']), 36 * HOUR);
    near(await lifeOf(['X-Sealpost-Expires: 7d']), 48 * HOUR);
    near(await lifeOf([`X-Sealpost-Expires: ${new Date(Date.now() + 400 * 24 * HOUR).toISOString()}`]), 48 * HOUR);
  });
});

describe('the end pass after a restart, and with two instances on one database', () => {
  let standIn: StandIn;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let checks: Database;
  const running: ServiceUnderTest[] = [];
  const start = async (env: Record<string, string>) => {
    const service = await startServiceForTest(sealService, {
      databaseUrl: database.url,
      env: { SEAL_MASTER_KEY: TEST_MASTER_KEY, ...standInEnv(standIn), ...env },
    });
    running.push(service);
    return service;
  };

  before(async () => {
    standIn = await startStandIn();
    database = await createTestDatabase('seal_end');
    checks = await openDatabase({ url: database.url, poolSize: 1 });
  });
  after(async () => {
    await checks?.close();
    for (const service of running) await service.stop().catch(() => undefined);
    await standIn?.close();
    await database?.drop();
  });

  it('shreds a message whose end date passed while no instance ran its pass, once one starts again', async () => {
    const first = await start({ SEAL_END_INTERVAL: '1h' });
    const sealed = await sealOne(first, ['X-Sealpost-Expires: 1s']);
    await sleep(1500);
    assert.equal((await call(first, `/v1/sealed/${sealed.id}/content`)).status, 410);
    await first.stop();
    assert.notEqual((await row(checks, sealed.id)).wrapped_key, null, 'not shredded before the restart');

    const second = await start({ SEAL_END_INTERVAL: '200ms' });
    for (let i = 0; i < 50 && (await row(checks, sealed.id)).wrapped_key !== null; i++) await sleep(100);
    assert.equal((await row(checks, sealed.id)).wrapped_key, null, 'shredded by the new instance on its own');
    for (let i = 0; i < 50 && standIn.pins().has(sealed.cid); i++) await sleep(100);
    assert.equal(standIn.pins().has(sealed.cid), false);
    assert.deepEqual(await endWork(checks, sealed.id), []);
    await second.stop();
  });

  it('ends each message once across two instances running their passes at the same time', async () => {
    const a = await start({ SEAL_END_INTERVAL: '1h' });
    const b = await start({ SEAL_END_INTERVAL: '1h' });
    const sealed = [];
    for (let i = 0; i < 30; i++) sealed.push(await sealOne(i % 2 ? a : b, ['X-Sealpost-Expires: 1s']));
    await sleep(1500);
    const counted = async () =>
      (await metric(a, 'sealed_messages_expired_total')) + (await metric(b, 'sealed_messages_expired_total'));
    const before = await counted();
    const passes = (await Promise.all([endPass(a), endPass(b), endPass(a), endPass(b)])) as Array<{ expired: number }>;
    assert.equal(
      passes.reduce((sum, pass) => sum + pass.expired, 0),
      30,
      'each message ended by one pass',
    );
    assert.equal((await counted()) - before, 30, 'counted once across the instances');
    for (const message of sealed) {
      const ended = await row(checks, message.id);
      assert.equal(ended.wrapped_key, null);
      assert.equal(ended.end_reason, 'expired');
      assert.equal(standIn.pins().has(message.cid), false);
    }
    const { rows } = await sql<{ count: string }>`select count(*) from seal.seal_end_work`.execute(checks.db);
    assert.equal(Number(rows[0]!.count), 0);
  });
});
