import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '../../cli/config.ts';
import type { RecordedRequest } from '../../devstack/ipfs-cluster/index.ts';
import { freePort } from '../../../test/support/ports.ts';
import {
  postSeal,
  replicateBlocks,
  rawMessage,
  standInCluster,
  startSealOnStandIn,
  startSealWithClusters,
  startStandIn,
  type StandIn,
} from '../../../test/support/seal.ts';

/**
 * Reading falls over to the next cluster. Both stand-ins listen on 127.0.0.1, their IPFS APIs on ports of
 * their own: each cluster's configuration names its IPFS API (ipfsApi), so the second copy is read from the
 * second daemon, not from the primary's again on one IPFS_PROXY_PORT.
 */

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const cats = (standIn: StandIn): RecordedRequest[] =>
  standIn.requests.filter((req) => req.listener === 'proxy' && req.path === '/api/v0/cat');

async function blockFiles(standIn: StandIn): Promise<string[]> {
  const entries = await readdir(join(standIn.dataDir, 'blocks'), { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.data'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('reading a sealed message falls over to the next cluster', () => {
  const stops: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  async function setUp(primaryTimeout = '30s') {
    const primary = await startStandIn();
    stops.push(() => primary.close());
    const secondary = await startStandIn();
    stops.push(() => secondary.close());
    const seal = await startSealWithClusters(
      [
        standInCluster(primary, { timeout: primaryTimeout, ipfsApi: primary.proxyUrl }),
        standInCluster(secondary, { ipfsApi: secondary.proxyUrl }),
      ],
      // The rule for a cluster without ipfsApi would send both reads to the primary's daemon.
      { IPFS_PROXY_PORT: String(primary.proxyPort) },
    );
    stops.push(() => seal.stop());
    const raw = rawMessage({ body: 'read me from wherever it is held' });
    const response = await postSeal(seal, raw);
    assert.equal(response.status, 201, await response.clone().text());
    const { id, cid } = await response.json();
    assert.equal(cats(primary).length + cats(secondary).length, 0, 'nothing read yet');
    const read = () =>
      fetch(`${seal.url}/v1/sealed/${id}/content`, { headers: { authorization: `Bearer ${seal.serviceToken}` } });
    return { primary, secondary, seal, raw, id, cid, read };
  }

  /** A metric's value on the service's /metrics (0 when absent); `line` without the service label. */
  async function metric(seal: { metricsUrl: string }, line: string): Promise<number> {
    const page = await (await fetch(`${seal.metricsUrl}/metrics`)).text();
    const labelled = line.replace(/\}$/, ',service="seal"}');
    const found = page.split('\n').find((entry) => entry.startsWith(`${labelled} `));
    return found ? Number(found.split(' ').at(-1)) : 0;
  }

  it("serves the secondary's intact copy when the primary's is damaged, and says which copy failed", async () => {
    const { primary, secondary, seal, raw, cid, read } = await setUp();
    await replicateBlocks(primary, secondary);
    await primary.damage(cid);

    const response = await read();
    assert.equal(response.status, 200, await response.clone().text());
    assert.deepEqual(Buffer.from(await response.arrayBuffer()), raw, 'the intact copy, verified');
    assert.equal(cats(primary).length, 1);
    assert.equal(cats(secondary).length, 1, "the second copy read from the secondary's own IPFS API");
    const damaged = seal.logs.find((line) => line.msg === "this cluster's copy of sealed content failed verification");
    assert.equal(damaged?.cluster, `127.0.0.1:${primary.port}`);
    assert.equal(damaged?.state, 'damaged');
    const served = seal.logs.find((line) => line.msg === 'sealed content served verified from another copy');
    assert.equal(served?.servedFrom, `127.0.0.1:${secondary.port}`);
    const name = (standIn: StandIn) => `127.0.0.1:${standIn.port}`;
    assert.equal(
      await metric(seal, `seal_read_copy_failures_total{cluster="${name(primary)}",state="damaged"}`),
      1,
      'counted with the cluster it came from',
    );
    assert.equal(await metric(seal, `seal_read_copy_failures_total{cluster="${name(secondary)}",state="damaged"}`), 0);
  });

  it('answers seal_broken naming each copy when no copy verifies', async () => {
    const { primary, secondary, id, cid, read } = await setUp();
    await replicateBlocks(primary, secondary);
    await primary.damage(cid);
    await secondary.damage(cid);

    const response = await read();
    assert.equal(response.status, 502);
    const error = await response.json();
    assert.equal(error.errorCode, 'seal_broken');
    assert.equal(error.cid, cid);
    assert.deepEqual(error.copies, [
      { cluster: `127.0.0.1:${primary.port}`, state: 'damaged' },
      { cluster: `127.0.0.1:${secondary.port}`, state: 'damaged' },
    ]);
    assert.match(error.message, new RegExp(`sealed message ${id} failed verification`));
    assert.match(error.message, new RegExp(`cluster 127\\.0\\.0\\.1:${primary.port}: damaged \\(`));
    assert.match(error.message, new RegExp(`cluster 127\\.0\\.0\\.1:${secondary.port}: damaged \\(`));
  });

  it('answers unavailable naming each copy as missing or unreachable when none is there', async () => {
    const { primary, secondary, read } = await setUp();
    primary.setIpfsDown(true);
    await secondary.close();

    const response = await read();
    assert.equal(response.status, 503);
    const error = await response.json();
    assert.deepEqual(error.copies, [
      { cluster: `127.0.0.1:${primary.port}`, state: 'missing' },
      { cluster: `127.0.0.1:${secondary.port}`, state: 'unreachable' },
    ]);
  });

  it('serves the content from the secondary when the primary has lost its blocks', async () => {
    const { primary, secondary, seal, raw, cid, read } = await setUp();
    await replicateBlocks(primary, secondary);
    for (const file of await blockFiles(primary)) await rm(file);

    const response = await read();
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal(response.headers.get('x-sealpost-sha256'), sha256(raw));
    assert.deepEqual(Buffer.from(await response.arrayBuffer()), raw);

    const [first] = cats(primary);
    const [second] = cats(secondary);
    assert.equal(cats(primary).length, 1, 'the primary was asked once');
    assert.equal(cats(secondary).length, 1, 'then the secondary, once');
    assert.deepEqual([first!.params.arg, second!.params.arg], [[cid], [cid]]);
    assert.ok(first!.time <= second!.time, 'primary first');
    const failure = seal.logs.find((line) => line.msg === 'reading sealed content failed on this cluster');
    assert.equal(failure?.cluster, `127.0.0.1:${primary.port}`);
    assert.equal(failure?.state, 'missing');
    assert.match(String(failure?.err), /answered 500: block was not found locally/);
  });

  it('gives up on a hanging primary after its timeout and serves the content from the secondary', async () => {
    const { primary, secondary, seal, raw, read } = await setUp('1s');
    await replicateBlocks(primary, secondary);
    primary.setHang(true);

    const response = await read();
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(raw));

    const [first] = cats(primary);
    const [second] = cats(secondary);
    assert.ok(first && second, 'a cat on the primary, then one on the secondary');
    const waited = second.time - first.time;
    assert.ok(waited >= 900, `the primary was given its 1s timeout (waited ${waited} ms)`);
    assert.ok(waited < 6_000, `and not the 30s default (waited ${waited} ms)`);
    const failure = seal.logs.find((line) => line.msg === 'reading sealed content failed on this cluster');
    assert.match(String(failure?.err), /no complete answer to POST \/api\/v0\/cat within 1s/);
    // The address the read went to (the IPFS API), not only the REST API the cluster is named by.
    assert.match(String(failure?.err), new RegExp(`at the IPFS API ${primary.proxyUrl} `));
  });

  it('reads the fallback cluster at IPFS_PROXY_URL, not on IPFS_PROXY_PORT', async () => {
    const standIn = await startStandIn();
    stops.push(() => standIn.close());
    const seal = await startSealOnStandIn(standIn, {
      // Nothing listens on this port: a read there would fail.
      IPFS_PROXY_PORT: String(await freePort()),
      IPFS_PROXY_URL: standIn.proxyUrl,
    });
    stops.push(() => seal.stop());
    const raw = rawMessage({ body: 'read through the address the variable names' });
    const response = await postSeal(seal, raw);
    assert.equal(response.status, 201, await response.clone().text());
    const { id } = await response.json();
    const read = await fetch(`${seal.url}/v1/sealed/${id}/content`, {
      headers: { authorization: `Bearer ${seal.serviceToken}` },
    });
    assert.equal(read.status, 200, await read.clone().text());
    assert.deepEqual(Buffer.from(await read.arrayBuffer()), raw);
    assert.equal(cats(standIn).length, 1);
  });

  it('refuses an IPFS_PROXY_URL with a path, naming the variable', () => {
    assert.throws(
      () => loadConfig({ IPFS_CLUSTER_HOST: '127.0.0.1', IPFS_PROXY_URL: 'http://10.0.0.5:9095/api/v0' }),
      /IPFS_PROXY_URL="http:\/\/10\.0\.0\.5:9095\/api\/v0" is not valid: expected an http:\/\/ or https:\/\/ URL/,
    );
  });
});
