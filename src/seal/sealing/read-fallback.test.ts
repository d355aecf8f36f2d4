import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RecordedRequest } from '../../devstack/ipfs-cluster/index.ts';
import {
  postSeal,
  rawMessage,
  standInCluster,
  startSealWithClusters,
  startStandIn,
  type StandIn,
} from '../../../test/support/seal.ts';

/**
 * Reading falls over to the next cluster. IPFS_PROXY_PORT is one port for every cluster, so the two
 * stand-ins listen on different loopback addresses (127.0.0.2, 127.0.0.3) with the same proxy port,
 * as two cluster peers on two hosts would.
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

/** The secondary gets the primary's blocks, as a real peer fetches them from IPFS to honour its pin. */
async function replicate(from: StandIn, to: StandIn): Promise<void> {
  await cp(join(from.dataDir, 'blocks'), join(to.dataDir, 'blocks'), { recursive: true });
}

describe('reading a sealed message falls over to the next cluster', () => {
  const stops: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  async function setUp(primaryTimeout = '30s') {
    const primary = await startStandIn({ host: '127.0.0.2' });
    stops.push(() => primary.close());
    const secondary = await startStandIn({ host: '127.0.0.3', proxyPort: primary.proxyPort });
    stops.push(() => secondary.close());
    const seal = await startSealWithClusters(
      [
        standInCluster(primary, { host: '127.0.0.2', timeout: primaryTimeout }),
        standInCluster(secondary, { host: '127.0.0.3' }),
      ],
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
    return { primary, secondary, seal, raw, cid, read };
  }

  it('serves the content from the secondary when the primary has lost its blocks', async () => {
    const { primary, secondary, seal, raw, cid, read } = await setUp();
    await replicate(primary, secondary);
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
    assert.equal(failure?.cluster, `127.0.0.2:${primary.port}`);
    assert.match(String(failure?.err), /answered 500: block was not found locally/);
  });

  it('gives up on a hanging primary after its timeout and serves the content from the secondary', async () => {
    const { primary, secondary, seal, raw, read } = await setUp('1s');
    await replicate(primary, secondary);
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
  });
});
