import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import {
  postSeal,
  rawMessage,
  standInCluster,
  startSealOnStandIn,
  startSealWithClusters,
  startStandIn,
  type StandIn,
} from '../../../test/support/seal.ts';
import type { ServiceUnderTest } from '../../../test/support/services.ts';

/**
 * POST /v1/admin/sealed/{id}/withdraw (docs/specification.md#end-dates): for one recipient, whose reads answer
 * 410 while the others read on; for everyone, the key destroyed in the same transaction and every cluster asked
 * to unpin, again and again until it holds.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const call = (seal: ServiceUnderTest, path: string, init: { method?: string; body?: unknown; token?: string } = {}) =>
  fetch(`${seal.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${init.token ?? seal.serviceToken}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });

const withdraw = (seal: ServiceUnderTest, id: string, body: unknown, token = seal.adminToken) =>
  call(seal, `/v1/admin/sealed/${id}/withdraw`, { method: 'POST', body, token });

async function sealFor(seal: ServiceUnderTest, to: string) {
  const response = await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, rawMessage({ to }));
  assert.equal(response.status, 201, await response.clone().text());
  return (await response.json()) as { id: string; cid: string };
}

async function message(seal: ServiceUnderTest, id: string) {
  const { rows } = await sql<{ wrapped_key: string | null; end_reason: string | null; end_note: string | null }>`
    select wrapped_key, end_reason, end_note from seal.sealed_messages where id = ${id}`.execute(seal.database.db);
  return rows[0]!;
}

async function endWork(seal: ServiceUnderTest, id: string) {
  const { rows } = await sql<{ cluster: string; attempts: number; error: string | null; next_attempt_at: Date }>`
    select cluster, attempts, error, next_attempt_at from seal.seal_end_work
    where sealed_id = ${id}`.execute(seal.database.db);
  return rows;
}

async function metric(seal: ServiceUnderTest, name: string, labels = ''): Promise<number> {
  const page = await (await fetch(`${seal.metricsUrl}/metrics`)).text();
  const line = page.split('\n').find((entry) => entry.startsWith(`${name}{${labels}`) || entry.startsWith(`${name} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100 && !(await check()); i++) await sleep(50);
  assert.ok(await check(), what);
}

describe('withdrawal by an operator', () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;

  before(async () => {
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn, { SEAL_END_INTERVAL: '1h' });
  });
  after(async () => {
    await seal?.stop();
    await standIn?.close();
  });

  it('for one recipient: their reads answer 410 message_withdrawn, the other recipient reads on', async () => {
    const sealed = await sealFor(seal, 'bob@rcpt.example, carol@rcpt.example');
    const counted = await metric(seal, 'sealed_messages_withdrawn_total', 'scope="recipient"');
    const answer = await withdraw(seal, sealed.id, {
      reason: 'sent to the wrong Bob',
      recipient: ' Bob@RCPT.example ',
    });
    assert.equal(answer.status, 200, await answer.clone().text());
    const view = await answer.json();
    const bob = view.recipients.find((recipient: { email: string }) => recipient.email === 'bob@rcpt.example');
    assert.ok(bob.withdrawnAt, 'the record says since when');
    assert.equal(view.end, undefined, 'the message itself runs on');

    const content = await call(seal, `/v1/sealed/${sealed.id}/content?recipient=bob%40rcpt.example`);
    assert.equal(content.status, 410);
    const error = await content.json();
    assert.equal(error.errorCode, 'message_withdrawn');
    assert.equal(error.endedAt, bob.withdrawnAt);
    assert.equal(error.contact, 'alice@sender.example');
    const signIn = await call(seal, `/v1/sealed/${sealed.id}/recipients/BOB%40rcpt.example`);
    assert.equal(signIn.status, 410);
    assert.equal((await signIn.json()).errorCode, 'message_withdrawn');

    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/content?recipient=carol%40rcpt.example`)).status, 200);
    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/recipients/carol%40rcpt.example`)).status, 200);
    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/content`)).status, 200);
    assert.notEqual((await message(seal, sealed.id)).wrapped_key, null, 'the key stays for the others');
    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/content?recipient=mallory%40rcpt.example`)).status, 404);

    const again = await withdraw(seal, sealed.id, { reason: 'again', recipient: 'bob@rcpt.example' });
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), view, 'a second withdrawal changes nothing');
    assert.equal(await metric(seal, 'sealed_messages_withdrawn_total', 'scope="recipient"'), counted + 1);
  });

  it('for everyone: the content route answers 410, the key is gone, every cluster unpins', async () => {
    const sealed = await sealFor(seal, 'bob@rcpt.example, carol@rcpt.example');
    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/content`)).status, 200);
    const counted = await metric(seal, 'sealed_messages_withdrawn_total', 'scope="everyone"');
    const answer = await withdraw(seal, sealed.id, { reason: 'erasure request' });
    assert.equal(answer.status, 200, await answer.clone().text());
    const view = await answer.json();
    assert.equal(view.end.reason, 'withdrawn');
    assert.equal(view.end.note, 'erasure request');

    const stored = await message(seal, sealed.id);
    assert.equal(stored.wrapped_key, null, 'the key is destroyed with the end, before any pass');
    assert.equal(stored.end_reason, 'withdrawn');
    for (const path of ['/content', '/content?recipient=carol%40rcpt.example', '/recipients/carol%40rcpt.example']) {
      const response = await call(seal, `/v1/sealed/${sealed.id}${path}`);
      assert.equal(response.status, 410, path);
      const error = await response.json();
      assert.equal(error.errorCode, 'message_withdrawn');
      assert.equal(error.endedAt, view.end.at);
      assert.equal(error.contact, 'alice@sender.example');
    }
    // The withdrawal starts the pass: the unpin follows without waiting for SEAL_END_INTERVAL.
    await eventually(async () => (await endWork(seal, sealed.id)).length === 0, 'the unpin is done');
    assert.equal(standIn.pins().has(sealed.cid), false);
    assert.ok(
      standIn.requests.some((request) => request.method === 'DELETE' && request.path === `/pins/${sealed.cid}`),
    );

    const ended = await call(seal, '/v1/sealed/ended', { method: 'POST', body: { ids: [sealed.id] } });
    assert.deepEqual(await ended.json(), { ended: [{ id: sealed.id, end: view.end }] });
    const again = await withdraw(seal, sealed.id, { reason: 'twice' });
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), view, 'an ended message is answered unchanged');
    assert.equal((await withdraw(seal, sealed.id, { reason: 'one more', recipient: 'bob@rcpt.example' })).status, 200);
    assert.equal(await metric(seal, 'sealed_messages_withdrawn_total', 'scope="everyone"'), counted + 1);
    assert.equal((await message(seal, sealed.id)).end_note, 'erasure request');
  });

  it('answers 404 for an unknown message or recipient, 400 without a reason, 401 without the admin token', async () => {
    const sealed = await sealFor(seal, 'bob@rcpt.example');
    assert.equal((await withdraw(seal, randomUUID(), { reason: 'x' })).status, 404);
    assert.equal((await withdraw(seal, sealed.id, { reason: 'x', recipient: 'eve@rcpt.example' })).status, 404);
    assert.equal((await withdraw(seal, sealed.id, {})).status, 400);
    assert.equal((await withdraw(seal, sealed.id, { reason: 'x' }, seal.serviceToken)).status, 401);
    assert.equal((await call(seal, `/v1/sealed/${sealed.id}/content`)).status, 200, 'nothing withdrawn');
  });
});

describe('unpinning after the end, with a cluster that fails', () => {
  const stops: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  it('keeps the unpin of a cluster that failed, counts the failure, and tries again until it holds', async () => {
    const primary = await startStandIn();
    stops.push(() => primary.close());
    let secondary = await startStandIn();
    const secondaryPort = secondary.port;
    stops.push(() => secondary.close());
    const seal = await startSealWithClusters([standInCluster(primary), standInCluster(secondary)], {
      IPFS_PROXY_PORT: String(primary.proxyPort),
      SEAL_END_INTERVAL: '300ms',
    });
    stops.push(() => seal.stop());
    const sealed = await sealFor(seal, 'bob@rcpt.example');
    const name = `127.0.0.1:${secondaryPort}`;
    await secondary.close();

    assert.equal((await withdraw(seal, sealed.id, { reason: 'wrong recipient' })).status, 200);
    await eventually(async () => (await endWork(seal, sealed.id)).some((work) => work.error !== null), 'a failure');
    const [work] = await endWork(seal, sealed.id);
    assert.equal(work!.cluster, name, 'only the unreachable cluster is left');
    assert.ok(work!.next_attempt_at.getTime() > Date.now(), 'tried again later');
    assert.equal(primary.pins().has(sealed.cid), false, 'the primary unpinned');
    assert.ok((await metric(seal, 'seal_unpin_failures_total', `cluster="${name}"`)) >= 1);

    secondary = await startStandIn({ port: secondaryPort });
    await eventually(async () => (await endWork(seal, sealed.id)).length === 0, 'the unpin held at last');
  });
});
