import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { systemClock } from '../../kernel/clock.ts';
import type { SealTables } from '../tables.ts';
import { ScrubStore } from './scrub-store.ts';
import {
  postSeal,
  replicateBlocks,
  rawMessage,
  standInCluster,
  startSealWithClusters,
  startStandIn,
  type StandIn,
} from '../../../test/support/seal.ts';

/**
 * The scrub against two stand-ins on 127.0.0.1, each read through its own IPFS API (ipfsApi): every running
 * message's copy on every cluster read and checked against its seal, what is damaged or missing listed, counted
 * and repaired where the cluster can, and cleared once found intact; ended messages left alone.
 */

const name = (standIn: StandIn) => `127.0.0.1:${standIn.port}`;
const cats = (standIn: StandIn, cid: string) =>
  standIn.requests.filter((req) => req.path === '/api/v0/cat' && req.params.arg?.[0] === cid);

type Copy = { id: string; cid: string; cluster: string; state: string; detail: string; repair: string };
type Seal = Awaited<ReturnType<typeof startSealWithClusters>>;

async function copies(seal: Seal): Promise<Copy[]> {
  const response = await fetch(`${seal.url}/v1/admin/copies`, {
    headers: { authorization: `Bearer ${seal.adminToken}` },
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()).copies;
}

/** Polls the admin list until `accept` takes it (bounded: the scrub runs every second here). */
async function listedUntil(seal: Seal, what: string, accept: (list: Copy[]) => boolean): Promise<Copy[]> {
  const deadline = Date.now() + 20_000;
  let list = await copies(seal);
  while (!accept(list)) {
    assert.ok(Date.now() < deadline, `${what}; the list is ${JSON.stringify(list)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    list = await copies(seal);
  }
  return list;
}

async function metric(seal: Seal, line: string): Promise<number> {
  const page = await (await fetch(`${seal.metricsUrl}/metrics`)).text();
  const labelled = line.replace(/\}$/, ',service="seal"}');
  const found = page.split('\n').find((entry) => entry.startsWith(`${labelled} `));
  return found ? Number(found.split(' ').at(-1)) : 0;
}

/** Polls a metric until it reads `value`: the gauge is computed at most every 5 s (kernel/metrics.ts cachedFor). */
async function metricBecomes(seal: Seal, line: string, value: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  let seen = await metric(seal, line);
  while (seen !== value) {
    assert.ok(Date.now() < deadline, `${line} is ${seen}, not ${value}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    seen = await metric(seal, line);
  }
}

describe('the scrub', () => {
  const stops: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  async function setUp(env: Record<string, string> = {}) {
    const primary = await startStandIn();
    stops.push(() => primary.close());
    const secondary = await startStandIn();
    stops.push(() => secondary.close());
    const seal = await startSealWithClusters(
      [
        standInCluster(primary, { ipfsApi: primary.proxyUrl, timeout: '2s' }),
        standInCluster(secondary, { ipfsApi: secondary.proxyUrl, timeout: '2s' }),
      ],
      { SEAL_SCRUB_INTERVAL: '1s', SEAL_SCRUB_RATE: '50', SEAL_PIN_CHECK_INTERVAL: '100ms', ...env },
    );
    stops.push(() => seal.stop());
    const sealOne = async (body: string) => {
      const response = await postSeal(seal, rawMessage({ body }));
      assert.equal(response.status, 201, await response.clone().text());
      const { id, cid } = (await response.json()) as { id: string; cid: string };
      await replicateBlocks(primary, secondary);
      // The scrub reads the copies the clusters hold as pinned: wait until both do.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const record = await fetch(`${seal.url}/v1/sealed/${id}`, {
          headers: { authorization: `Bearer ${seal.serviceToken}` },
        });
        const { pins } = (await record.json()) as { pins: Array<{ status: string }> };
        if (pins.every((pin) => pin.status === 'pinned')) break;
        assert.ok(Date.now() < deadline, `not pinned on both: ${JSON.stringify(pins)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return { id, cid };
    };
    return { primary, secondary, seal, sealOne };
  }

  it("lists the primary's damaged copy, counts it, says why it is not repaired, clears it once intact", async () => {
    const { primary, secondary, seal, sealOne } = await setUp();
    const { id, cid } = await sealOne('a message whose first copy rots');
    await primary.damage(cid);

    const [found, ...others] = await listedUntil(seal, 'the damaged copy is listed', (list) => list.length > 0);
    assert.equal(others.length, 0, 'only the damaged copy');
    assert.equal(found!.id, id);
    assert.equal(found!.cid, cid);
    assert.equal(found!.cluster, name(primary));
    assert.equal(found!.state, 'damaged');
    assert.match(found!.repair, /^not repaired: the cluster holds the pin as pinned/);
    assert.ok(
      cats(primary, cid).every((req) => req.params.offline?.[0] === 'true'),
      "the cluster's own blocks only",
    );
    await metricBecomes(seal, `seal_scrub_copies{cluster="${name(primary)}",state="damaged"}`, 1);
    assert.equal(await metric(seal, `seal_scrub_copies{cluster="${name(secondary)}",state="damaged"}`), 0);
    assert.ok((await metric(seal, `seal_scrub_checked_total{cluster="${name(primary)}",state="damaged"}`)) >= 1);
    assert.ok((await metric(seal, `seal_scrub_checked_total{cluster="${name(secondary)}",state="intact"}`)) >= 1);
    const logged = seal.logs.find(
      (line) => line.msg === "scrub: this cluster's copy of a sealed message fails verification",
    );
    assert.equal(logged?.cluster, name(primary));

    // The operator replaces the bad block from the intact copy; the next scrub finds it whole.
    await replicateBlocks(secondary, primary);
    await listedUntil(seal, 'the copy is cleared once intact', (list) => list.length === 0);
    await metricBecomes(seal, `seal_scrub_copies{cluster="${name(primary)}",state="damaged"}`, 0);
  });

  it("lists a stopped daemon's copies as missing, asks the cluster to recover them, clears them after", async () => {
    const { secondary, seal, sealOne } = await setUp();
    const { cid } = await sealOne('a message on a cluster whose daemon stops');
    secondary.setIpfsDown(true);

    const [found] = await listedUntil(seal, 'the missing copy is listed', (list) => list.length > 0);
    assert.equal(found!.cluster, name(secondary));
    assert.equal(found!.state, 'missing');
    assert.match(found!.detail, /502/);
    assert.match(found!.repair, /^recover requested/);
    assert.ok(
      secondary.requests.some((req) => req.method === 'POST' && req.path === `/pins/${cid}/recover`),
      'the cluster was asked to recover the pin',
    );
    await metricBecomes(seal, `seal_scrub_copies{cluster="${name(secondary)}",state="missing"}`, 1);

    secondary.setIpfsDown(false);
    await listedUntil(seal, 'cleared once the daemon is back', (list) => list.length === 0);
    await metricBecomes(seal, `seal_scrub_copies{cluster="${name(secondary)}",state="missing"}`, 0);
  });

  it('leaves a copy not pinned yet to the pin follower: not read, not listed', async () => {
    const { primary, secondary, seal, sealOne } = await setUp({ SEAL_SCRUB_INTERVAL: '0s' });
    const { cid } = await sealOne('pinned on both');
    secondary.setFailPins(true);
    const response = await postSeal(seal, rawMessage({ body: 'pinned on the primary only' }));
    assert.equal(response.status, 201);
    const pending = (await response.json()) as { cid: string };
    const pass = await seal.service.workers!.scrubber!.runOnce();
    assert.deepEqual(pass, { messages: 2, damaged: 0, missing: 0 });
    assert.equal(cats(secondary, pending.cid).length, 0, 'the copy in error is not read');
    assert.equal(cats(primary, pending.cid).length, 1);
    assert.equal(cats(secondary, cid).length, 1);
    assert.deepEqual(await copies(seal), []);
  });

  it('skips ended messages, and keeps to SEAL_SCRUB_RATE', async () => {
    const { primary, seal, sealOne } = await setUp({ SEAL_SCRUB_INTERVAL: '0s', SEAL_SCRUB_RATE: '2' });
    const sealed = [];
    for (const body of ['first', 'second', 'third', 'withdrawn']) sealed.push(await sealOne(body));
    const withdrawn = sealed.pop()!;
    const answer = await fetch(`${seal.url}/v1/admin/sealed/${withdrawn.id}/withdraw`, {
      method: 'POST',
      headers: { authorization: `Bearer ${seal.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'sent in error' }),
    });
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.ok(
      seal.logs.some((line) => line.msg === 'SEAL_SCRUB_INTERVAL is 0: the scrub is off'),
      'no timer',
    );

    // With the scrub off its pass still runs by hand, every running message due at once.
    const pass = await seal.service.workers!.scrubber!.runOnce();
    assert.deepEqual(pass, { messages: 3, damaged: 0, missing: 0 });
    assert.equal(cats(primary, withdrawn.cid).length, 0, 'the withdrawn message is not read');
    const firsts = sealed.map(({ cid }) => cats(primary, cid)[0]!.time).sort((a, b) => a - b);
    assert.ok(firsts[2]! - firsts[0]! >= 900, `2 messages a second: ${firsts[2]! - firsts[0]!} ms for three`);
  });

  it('lets one instance at a time claim a message, so instances share the pass', async () => {
    const { seal, sealOne } = await setUp({ SEAL_SCRUB_INTERVAL: '0s' });
    for (const body of ['a', 'b', 'c', 'd', 'e']) await sealOne(body);
    const instance = () => new ScrubStore(seal.database.db.withSchema('seal') as Kysely<SealTables>, systemClock);
    const lease = new Date(Date.now() + 60_000);
    const claim = (limit: number) => instance().claimDue(limit, lease, new Date());
    const [one, two] = await Promise.all([claim(3), claim(3)]);
    const rest = await claim(10);
    const ids = [...one, ...two, ...rest].map((target) => target.id);
    assert.equal(new Set(ids).size, ids.length, `no message claimed twice: ${ids}`);
    assert.equal(ids.length, 5, 'every due message claimed once');
    assert.deepEqual(await claim(10), [], 'a leased message is not due until its lease ends');
  });
});
