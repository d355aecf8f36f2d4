import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { Writable } from 'node:stream';
import {
  basicAuthorization,
  clusterCtl,
  startRealClusters,
  type ClusterCtlTarget,
  type RealClusters,
} from '../../../test/support/ipfs-real.ts';
import { startStandIn, type StandIn } from '../../../test/support/seal.ts';
import { createTestCertificate } from '../../../test/support/tls.ts';
import { copyProblem } from '../sealing/copies.ts';
import { ClusterClient, ClusterError, type PinState } from './client.ts';
import type { ClusterSettings } from './config.ts';

/**
 * One conformance suite, two targets: every call the seal service makes to IPFS Cluster, and the
 * operator's `ipfs-cluster-ctl pin rm`, against the stand-in (the embedded default) and against the real
 * IPFS Cluster v1.1.6 with Kubo, built from source (scripts/build-ipfs.sh). Each target is two one-peer
 * clusters whose IPFS nodes peer: the primary's REST API in plain HTTP, the secondary's over HTTPS with a
 * test CA, both with Basic auth.
 */
interface Target {
  primary: ClusterSettings & { proxyPort: number };
  secondary: ClusterSettings & { proxyPort: number };
  ca: string;
  /** The same CA as a file, for `ipfs-cluster-ctl` (SSL_CERT_FILE). */
  caPath: string;
  stopIpfs(which: 'primary' | 'secondary'): Promise<void>;
  startIpfs(which: 'primary' | 'secondary'): Promise<void>;
  /** Flips a bit of the block of a small file in the peer's blockstore on disk (same CID, other bytes). */
  damage(which: 'primary' | 'secondary', cid: string): Promise<void>;
  stop(): Promise<void>;
}

async function standInTarget(): Promise<Target> {
  const certificate = await createTestCertificate();
  const primary = await startStandIn({ user: 'sealer', pass: 'primary-pass' });
  const secondary = await startStandIn({
    user: 'sealer',
    pass: 'secondary-pass',
    tls: { cert: certificate.cert, key: certificate.key },
    proxyAuth: false,
  });
  const byName = { primary, secondary } as Record<'primary' | 'secondary', StandIn>;
  return {
    primary: {
      host: '127.0.0.1',
      port: String(primary.port),
      user: 'sealer',
      pass: 'primary-pass',
      secure: false,
      timeout: '30s',
      proxyPort: primary.proxyPort,
    },
    secondary: {
      host: '127.0.0.1',
      port: String(secondary.port),
      user: 'sealer',
      pass: 'secondary-pass',
      secure: true,
      timeout: '30s',
      proxyPort: secondary.proxyPort,
    },
    ca: certificate.cert,
    caPath: certificate.certPath,
    stopIpfs: async (which) => byName[which].setIpfsDown(true),
    startIpfs: async (which) => byName[which].setIpfsDown(false),
    damage: (which, cid) => byName[which].damage(cid),
    async stop() {
      await primary.close();
      await secondary.close();
      await certificate.remove();
    },
  };
}

async function realTarget(): Promise<Target> {
  const clusters: RealClusters = await startRealClusters();
  const settings = (which: 'primary' | 'secondary') => {
    const cluster = clusters[which];
    return {
      host: '127.0.0.1',
      port: String(cluster.restPort),
      user: cluster.user,
      pass: cluster.pass,
      secure: cluster.secure,
      timeout: '30s',
      proxyPort: cluster.proxyPort,
    };
  };
  return {
    primary: settings('primary'),
    secondary: settings('secondary'),
    ca: clusters.ca.cert,
    caPath: clusters.ca.certPath,
    stopIpfs: (which) => clusters[which].stopKubo(),
    startIpfs: (which) => clusters[which].startKubo(),
    damage: (which, cid) => clusters[which].damageBlock(cid),
    stop: () => clusters.stop(),
  };
}

function client(target: Target, which: 'primary' | 'secondary', extra: Partial<ClusterSettings> = {}): ClusterClient {
  const { proxyPort, ...settings } = target[which];
  return new ClusterClient({ ...settings, ...extra }, { proxyPort, ca: [target.ca] });
}

function ctlTarget(target: Target, which: 'primary' | 'secondary'): ClusterCtlTarget {
  const { port, user, pass, secure } = target[which];
  return { restPort: Number(port), user: user!, pass: pass!, secure, caPath: target.caPath };
}

/** The CIDs `ipfs-cluster-ctl --enc json pin ls` prints (one indented api.Pin object after another). */
function listedCids(stdout: string): string[] {
  return [...stdout.matchAll(/^ {4}"cid": "([^"]+)"/gm)].map((match) => match[1]!);
}

/** One request to the primary's REST API (plain HTTP, Basic auth); the body as its JSON documents. */
async function restCall(target: Target, method: string, path: string): Promise<{ status: number; json: any[] }> {
  const { host, port, user, pass } = target.primary;
  const res = await fetch(`http://${host}:${port}${path}`, {
    method,
    headers: { authorization: basicAuthorization({ user: user!, pass: pass! }) },
  });
  const text = await res.text();
  return {
    status: res.status,
    json: text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line)),
  };
}

async function* chunks(data: Buffer): AsyncGenerator<Buffer> {
  for (let i = 0; i < data.length; i += 65536) yield data.subarray(i, i + 65536);
}

async function cat(cluster: ClusterClient, path: string, offline = false): Promise<Buffer> {
  const parts: Buffer[] = [];
  await cluster.cat(
    path,
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        parts.push(chunk);
        done();
      },
    }),
    offline,
  );
  return Buffer.concat(parts);
}

/** GET /pins/{cid} until the state is not `pinning` (IPFS pins asynchronously), within 60 s. */
async function settledState(cluster: ClusterClient, cid: string): Promise<PinState> {
  let state = await cluster.pinStatus(cid);
  for (let i = 0; i < 300 && state.state === 'pinning'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    state = await cluster.pinStatus(cid);
  }
  return state;
}

/** The cluster's own record of a CID (GET /pins/{cid}). */
async function globalPinInfo(cluster: ClusterClient, cid: string) {
  const info = await cluster.pinInfo(cid);
  assert.ok(info, `GET /pins/${cid} answered`);
  return info;
}

for (const [name, start] of [
  ['the IPFS Cluster stand-in', standInTarget],
  ['the real IPFS Cluster v1.1.6 with Kubo', realTarget],
] as const) {
  describe(`cluster client conformance: ${name}`, () => {
    let target: Target;
    before(async () => {
      target = await start();
    });
    after(() => target?.stop());

    it('adds through the primary, reads the bytes back through its IPFS proxy; the primary holds the pin', async () => {
      const primary = client(target, 'primary');
      const data = randomBytes(700_000);
      const added = await primary.add(chunks(data), 'message.sealed');
      assert.match(added.cid, /^Qm|^bafy/);
      assert.equal(added.wrapped, false);
      assert.deepEqual(await settledState(primary, added.cid), { state: 'pinned' });
      assert.ok((await cat(primary, added.cid)).equals(data), 'cat gives the bytes added');
    });

    it("sends addParams by the server's names: wrap, no streaming, hidden, local, recursive, no-pin", async () => {
      const data = randomBytes(5000);
      const wrapped = await client(target, 'primary', {
        addParams: { wrap: true, streamChannels: false, hidden: true, local: true, recursive: true },
      }).add(chunks(data), 'inner.sealed');
      assert.equal(wrapped.wrapped, true);
      assert.ok(
        (await cat(client(target, 'primary'), `/ipfs/${wrapped.cid}/inner.sealed`)).equals(data),
        'the file sits in the wrapping directory',
      );
      const unpinned = await client(target, 'primary', { addParams: { noPin: true } }).add(
        chunks(randomBytes(3000)),
        'loose.sealed',
      );
      const state = await client(target, 'primary').pinStatus(unpinned.cid);
      assert.equal(state.state, 'pin_error');
      assert.match((state as { error: string }).error, /unpinned/, 'no-pin left it out of the pinset');
    });

    it('pins on the secondary, which fetches the blocks from the primary: pinning, then pinned', async () => {
      const added = await client(target, 'primary').add(chunks(randomBytes(400_000)), 'shared.sealed');
      const secondary = client(target, 'secondary');
      await secondary.pin(added.cid);
      const first = await secondary.pinStatus(added.cid);
      assert.ok(first.state === 'pinning' || first.state === 'pinned', JSON.stringify(first));
      assert.deepEqual(await settledState(secondary, added.cid), { state: 'pinned' });
    });

    it("sends pinParams by the server's names: name and replication recorded, on /add as on POST /pins", async () => {
      const pinParams = {
        name: 'sealpost büro',
        replicationFactorMin: -1,
        replicationFactorMax: -1,
        expireIn: '720h',
      };
      const primary = client(target, 'primary', { pinParams });
      const added = await primary.add(chunks(randomBytes(2000)), 'named.sealed');
      assert.equal((await globalPinInfo(primary, added.cid)).name, 'sealpost büro', '/add took the pin name');
      const secondary = client(target, 'secondary', { pinParams: { ...pinParams, name: 'on the secondary' } });
      await secondary.pin(added.cid);
      assert.equal((await globalPinInfo(secondary, added.cid)).name, 'on the secondary');
      assert.deepEqual(await settledState(secondary, added.cid), { state: 'pinned' });
    });

    it('names the pin after its sealed message, on /add and on POST /pins (ipfs-cluster-ctl status)', async () => {
      const sealedId = randomUUID();
      const added = await client(target, 'primary').add(chunks(randomBytes(1200)), `${sealedId}.sealed`, sealedId);
      assert.equal((await globalPinInfo(client(target, 'primary'), added.cid)).name, `sealpost:${sealedId}`);
      const secondary = client(target, 'secondary');
      await secondary.pin(added.cid, sealedId);
      assert.equal((await globalPinInfo(secondary, added.cid)).name, `sealpost:${sealedId}`);
      // A configured pinParams.name stands in for `sealpost` (one deployment's pins told from another's).
      const branded = client(target, 'secondary', { pinParams: { name: 'acme' } });
      await branded.pin(added.cid, sealedId);
      assert.equal((await globalPinInfo(branded, added.cid)).name, `acme:${sealedId}`);
    });

    it("takes the longest pin name allowed (2 KiB URL-encoded) within the REST API's header limit", async () => {
      const longest = `${'ü'.repeat(341)}ab`; // 341 × 6 + 2 = 2048 bytes URL-encoded
      assert.equal(encodeURIComponent(longest).length, 2048);
      const primary = client(target, 'primary', {
        pinParams: { name: longest, replicationFactorMin: -1, replicationFactorMax: -1, expireIn: '720h' },
      });
      const added = await primary.add(chunks(randomBytes(500)), 'long-name.sealed');
      await primary.pin(added.cid);
      assert.equal((await globalPinInfo(primary, added.cid)).name, longest);
    });

    it('refuses on every pin the replication pairs the configuration refuses, takes those it accepts', async () => {
      const added = await client(target, 'primary').add(chunks(randomBytes(1000)), 'replicated.sealed');
      for (const [min, max] of [
        [2, undefined],
        [-1, 3],
        [3, -1],
      ] as const) {
        const pinParams = { replicationFactorMin: min, ...(max === undefined ? {} : { replicationFactorMax: max }) };
        await assert.rejects(
          client(target, 'primary', { pinParams }).pin(added.cid),
          (error: ClusterError) => error.status !== undefined && error.status >= 400,
          `${min}/${max}`,
        );
      }
      for (const [min, max] of [
        [-1, -1],
        [1, 1],
        [0, 0],
      ] as const) {
        await client(target, 'primary', { pinParams: { replicationFactorMin: min, replicationFactorMax: max } }).pin(
          added.cid,
        );
      }
    });

    it('reports a CID outside the pinset as an error, unpins, and takes a second unpin as done', async () => {
      const primary = client(target, 'primary');
      const added = await primary.add(chunks(randomBytes(1500)), 'gone.sealed');
      await primary.unpin(added.cid);
      const state = await primary.pinStatus(added.cid);
      assert.equal(state.state, 'pin_error');
      assert.match((state as { error: string }).error, /unpinned/);
      assert.deepEqual(
        (await globalPinInfo(primary, added.cid)).allocations,
        [],
        'the record of a CID outside the pinset has no allocations',
      );
      await primary.unpin(added.cid);
    });

    it('unpins with `ipfs-cluster-ctl pin rm` over HTTP and HTTPS: reported unpinned, gone from `pin ls`', async () => {
      const added = await client(target, 'primary').add(chunks(randomBytes(2500)), 'ctl.sealed');
      await client(target, 'secondary').pin(added.cid);
      for (const which of ['primary', 'secondary'] as const) {
        const ctl = (...args: string[]) => clusterCtl(ctlTarget(target, which), args);
        const before = await ctl('--enc', 'json', 'pin', 'ls');
        assert.equal(before.code, 0, before.stdout + before.stderr);
        assert.ok(listedCids(before.stdout).includes(added.cid), `${which}: listed before`);
        // `pin rm` sends DELETE /pins/ipfs/{cid}, then reports GET /pins/{cid}.
        const removed = await ctl('--enc', 'json', 'pin', 'rm', added.cid);
        assert.equal(removed.code, 0, removed.stdout + removed.stderr);
        const status = JSON.parse(removed.stdout);
        assert.equal(status.cid, added.cid);
        assert.deepEqual(
          Object.values(status.peer_map).map((peer: any) => peer.status),
          ['unpinned'],
        );
        const after = await ctl('--enc', 'json', 'pin', 'ls');
        assert.equal(after.code, 0, after.stdout + after.stderr);
        assert.ok(!listedCids(after.stdout).includes(added.cid), `${which}: not listed after`);
        const again = await ctl('pin', 'rm', added.cid);
        assert.equal(again.code, 2, 'a second unpin is an error');
        assert.match(again.stdout, /Code: 404\s+Message: pin is not part of the pinset/);
      }
    });

    it('answers DELETE /pins/{cid} with the pin as stored, then 404; a malformed CID or path 400', async () => {
      const primary = client(target, 'primary');
      const data = randomBytes(2600);
      const { cid } = await primary.add(chunks(data), 'deleted.sealed');
      const stored = await restCall(target, 'GET', `/allocations/${cid}`);
      assert.equal(stored.status, 200);

      const deleted = await restCall(target, 'DELETE', `/pins/${cid}`);
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.json, stored.json, 'the answer is the pin the pinset held');
      const listed = await restCall(target, 'GET', '/pins');
      assert.ok(!listed.json.some((info) => info.cid === cid), 'GET /pins no longer lists it');
      const allocations = await restCall(target, 'GET', '/allocations');
      assert.ok(!allocations.json.some((pin) => pin.cid === cid), 'GET /allocations no longer lists it');
      assert.deepEqual(await restCall(target, 'GET', `/allocations/${cid}`), {
        status: 404,
        json: [{ code: 404, message: 'pin is not part of the pinset' }],
      });
      const info = await restCall(target, 'GET', `/pins/${cid}`);
      assert.equal(info.status, 200);
      assert.deepEqual(info.json[0].allocations, []);
      assert.deepEqual(
        Object.values(info.json[0].peer_map).map((peer: any) => peer.status),
        ['unpinned'],
      );

      for (const path of [`/pins/${cid}`, `/pins/ipfs/${cid}`]) {
        assert.deepEqual(await restCall(target, 'DELETE', path), {
          status: 404,
          json: [{ code: 404, message: 'pin is not part of the pinset' }],
        });
      }
      assert.deepEqual(await restCall(target, 'DELETE', '/pins/not-a-cid'), {
        status: 400,
        json: [{ code: 400, message: 'error decoding Cid: invalid cid: selected encoding not supported' }],
      });
      assert.deepEqual(await restCall(target, 'DELETE', '/pins/ipfs/not-a-cid'), {
        status: 400,
        json: [
          {
            code: 400,
            message: 'error parsing path: invalid path "/ipfs/not-a-cid": invalid cid: selected encoding not supported',
          },
        ],
      });
      // IPFS unpins, it does not delete: the blocks stay (and read) until the daemon's garbage collection.
      assert.ok((await cat(primary, cid)).equals(data), 'the unpinned content still reads until GC');
    });

    it('refuses a wrong password with 401, and an HTTPS cluster whose certificate is not trusted', async () => {
      await assert.rejects(
        client(target, 'primary', { pass: 'wrong' }).id(),
        (error: ClusterError) => error.kind === 'http' && error.status === 401,
      );
      const { proxyPort, ...settings } = target.secondary;
      const untrusting = new ClusterClient(settings, { proxyPort });
      await assert.rejects(
        untrusting.id(),
        (error: ClusterError) => error.kind === 'tls' && /IPFS_CLUSTER_CA_FILE/.test(error.message),
      );
      assert.equal((await client(target, 'secondary').ready()).id.length > 0, true, 'with the CA it answers');
    });

    it('gives up on a peer that accepts the connection and never answers, within the timeout', async () => {
      const silent: Server = createServer(() => undefined);
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      try {
        const port = (silent.address() as { port: number }).port;
        const hanging = new ClusterClient(
          { host: '127.0.0.1', port: String(port), secure: false, timeout: '300ms' },
          { proxyPort: port },
        );
        await assert.rejects(
          hanging.add(chunks(randomBytes(100)), 'x'),
          (error: ClusterError) => error.kind === 'timeout',
        );
      } finally {
        silent.close();
      }
    });

    it('serves a block damaged on disk as it is (same CID, one byte changed), offline too', async () => {
      const primary = client(target, 'primary');
      const data = randomBytes(5000);
      const added = await primary.add(chunks(data), 'damaged.sealed');
      assert.ok((await cat(primary, added.cid, true)).equals(data), 'read offline before the damage');
      await target.damage('primary', added.cid);
      for (const offline of [true, false]) {
        const read = await cat(primary, added.cid, offline);
        assert.equal(read.length, data.length);
        const changed = [...read].filter((byte, index) => byte !== data[index]).length;
        assert.equal(changed, 1, 'the daemon does not check a block against its CID when it reads it');
      }
    });

    it("with a peer's IPFS daemon down: /id shows ipfs.error; readiness, adds, pins fail, then recover", async () => {
      const added = await client(target, 'primary').add(chunks(randomBytes(3000)), 'outage.sealed');
      const secondary = client(target, 'secondary');
      await target.stopIpfs('secondary');
      try {
        const id = await secondary.id();
        assert.notEqual(id.ipfsError, '', 'GET /id answers, with the daemon error in ipfs.error');
        await assert.rejects(secondary.ready(), /its IPFS daemon does not/);
        await assert.rejects(secondary.add(chunks(randomBytes(100)), 'refused.sealed'));
        await secondary.pin(added.cid);
        const state = await settledState(secondary, added.cid);
        assert.equal(state.state, 'pin_error', 'accepted, then failed in IPFS');
        // The proxy answers, the daemon behind it does not: a read finds the copy missing, not the cluster gone.
        const read = await cat(secondary, added.cid, true).then(
          () => undefined,
          (error: unknown) => error,
        );
        assert.ok(read instanceof ClusterError && read.kind === 'http', `an HTTP error from the proxy: ${read}`);
        assert.equal(copyProblem(secondary.name, read).state, 'missing');
      } finally {
        await target.startIpfs('secondary');
      }
      for (let i = 0; i < 100 && (await secondary.id()).ipfsError !== ''; i++)
        await new Promise((resolve) => setTimeout(resolve, 200));
      await secondary.ready();
      await secondary.recover(added.cid);
      let state = await settledState(secondary, added.cid);
      for (let i = 0; i < 30 && state.state !== 'pinned'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        await secondary.recover(added.cid);
        state = await settledState(secondary, added.cid);
      }
      assert.deepEqual(state, { state: 'pinned' }, 'recovered once the daemon is back');
    });
  });
}
