import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { sql } from 'kysely';
import {
  basicAuthorization,
  startRealClusters,
  type RealCluster,
  type RealClusters,
} from '../../../test/support/ipfs-real.ts';
import { postSeal, rawMessage, startSealWithClusters } from '../../../test/support/seal.ts';
import type { ServiceUnderTest } from '../../../test/support/services.ts';
import { ClusterClient } from '../clusters/client.ts';

/**
 * The end of a message on the real IPFS Cluster v1.1.6 with Kubo (scripts/build-ipfs.sh): two one-peer clusters,
 * the primary in plain HTTP and the secondary over HTTPS, both with Basic auth. A message sealed with
 * `X-Sealpost-Expires: 2s` reads, answers 410 message_expired once the date passed, and after the end pass its key
 * is gone and neither cluster has the CID in its pinset any more.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The CIDs of a cluster's pinset: GET /allocations, one JSON object (api.Pin) per line. */
function pinset(cluster: RealCluster, ca: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const request = (cluster.secure ? https : http).get(
      {
        host: '127.0.0.1',
        port: cluster.restPort,
        path: '/allocations?filter=pin',
        headers: { authorization: basicAuthorization(cluster) },
        ...(cluster.secure ? { ca } : {}),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          // 204: the stream of pins is empty.
          if (res.statusCode === 204) return resolve([]);
          if (res.statusCode !== 200) return reject(new Error(`GET /allocations answered ${res.statusCode}: ${text}`));
          const trimmed = text.trim();
          const pins = trimmed.startsWith('[')
            ? (JSON.parse(trimmed) as Array<{ cid: string }>)
            : trimmed
                .split('\n')
                .filter((line) => line.trim() !== '')
                .map((line) => JSON.parse(line) as { cid: string });
          resolve(pins.map((pin) => pin.cid));
        });
      },
    );
    request.on('error', reject);
  });
}

describe('an end date on the real IPFS Cluster', () => {
  let clusters: RealClusters;
  let seal: ServiceUnderTest;
  const settings = (cluster: RealCluster) => ({
    host: '127.0.0.1',
    port: String(cluster.restPort),
    user: cluster.user,
    pass: cluster.pass,
    secure: cluster.secure,
    timeout: '20s',
  });
  const client = (cluster: RealCluster) =>
    new ClusterClient(settings(cluster), { proxyPort: cluster.proxyPort, ca: [clusters.ca.cert] });

  before(async () => {
    clusters = await startRealClusters();
    seal = await startSealWithClusters([settings(clusters.primary), settings(clusters.secondary)], {
      IPFS_PROXY_PORT: String(clusters.primary.proxyPort),
      IPFS_CLUSTER_CA_FILE: clusters.ca.certPath,
      SEAL_PIN_CHECK_INTERVAL: '500ms',
      SEAL_END_INTERVAL: '1h',
    });
  });
  after(async () => {
    await seal?.stop();
    await clusters?.stop();
  });

  it('reads, then answers 410 message_expired; the key is destroyed and both clusters unpin the CID', async () => {
    const response = await postSeal(
      { url: seal.url, serviceToken: seal.serviceToken },
      rawMessage({ headers: ['X-Sealpost-Expires: 2s'] }),
    );
    assert.equal(response.status, 201, await response.clone().text());
    const sealed = (await response.json()) as { id: string; cid: string; expiresAt: string };
    const read = (path = '') =>
      fetch(`${seal.url}/v1/sealed/${sealed.id}/content${path}`, {
        headers: { authorization: `Bearer ${seal.serviceToken}` },
      });
    assert.equal((await read()).status, 200);
    for (const cluster of [clusters.primary, clusters.secondary]) {
      assert.ok((await pinset(cluster, clusters.ca.cert)).includes(sealed.cid), 'in the pinset of both clusters');
    }

    await sleep(Math.max(0, Date.parse(sealed.expiresAt) - Date.now()) + 200);
    const expired = await read();
    assert.equal(expired.status, 410);
    assert.equal((await expired.json()).errorCode, 'message_expired');

    await seal.service.workers!.ender!.runOnce();
    const { rows } = await sql<{ wrapped_key: string | null; waiting: string }>`
      select wrapped_key, (select count(*) from seal.seal_end_work where sealed_id = ${sealed.id}) as waiting
      from seal.sealed_messages where id = ${sealed.id}`.execute(seal.database.db);
    assert.equal(rows[0]!.wrapped_key, null, 'the key is destroyed');
    assert.equal(Number(rows[0]!.waiting), 0, 'both unpins are done');
    for (const cluster of [clusters.primary, clusters.secondary]) {
      assert.ok(!(await pinset(cluster, clusters.ca.cert)).includes(sealed.cid), 'no longer in the pinset');
      const state = await client(cluster).pinStatus(sealed.cid);
      assert.equal(state.state, 'pin_error');
      assert.match((state as { error: string }).error, /unpinned/);
    }
    assert.equal((await read()).status, 410);
  });
});
