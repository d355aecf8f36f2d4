import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createTestCertificate } from '../../../test/support/tls.ts';
import { refusedPort } from '../../../test/support/ports.ts';
import type { ServiceUnderTest } from '../../../test/support/services.ts';
import {
  postSeal,
  rawMessage,
  standInCluster,
  startSealOnStandIn,
  startSealWithClusters,
  startStandIn,
  type StandIn,
} from '../../../test/support/seal.ts';
import { ClusterClient } from './client.ts';
import { environmentCluster, expireInToSend } from './config.ts';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const addRequests = (standIn: StandIn) => standIn.requests.filter((r) => r.listener === 'rest' && r.path === '/add');
const pinRequests = (standIn: StandIn) =>
  standIn.requests.filter((r) => r.listener === 'rest' && r.method === 'POST' && r.path.startsWith('/pins/'));

/** Starts what a test needs and stops all of it afterwards, whatever happened. */
function resources() {
  const stops: Array<() => Promise<unknown>> = [];
  return {
    async standIn(options: Parameters<typeof startStandIn>[0] = {}) {
      const standIn = await startStandIn(options);
      stops.push(() => standIn.close());
      return standIn;
    },
    async seal(clusters: Parameters<typeof startSealWithClusters>[0], env: Record<string, string> = {}) {
      const service = await startSealWithClusters(clusters, env);
      stops.push(() => service.stop());
      return service;
    },
    async sealOn(standIn: StandIn, env: Record<string, string> = {}) {
      const service = await startSealOnStandIn(standIn, env);
      stops.push(() => service.stop());
      return service;
    },
    async stopAll() {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
    },
  };
}

const get = (service: ServiceUnderTest, path: string) =>
  fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${service.serviceToken}` } });

type PinView = { cluster: string; status: string; error?: string; attempts: number };

/** GET /v1/sealed/{id} until `done` holds for its pins (the follower works in the background). */
async function pinsWhen(service: ServiceUnderTest, id: string, done: (pins: PinView[]) => boolean): Promise<PinView[]> {
  let pins: PinView[] = [];
  for (let i = 0; i < 150; i++) {
    pins = (await (await get(service, `/v1/sealed/${id}`)).json()).pins;
    if (done(pins)) return pins;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return pins;
}

describe("cluster calls: add on the primary, pin on all, with each cluster's parameters", () => {
  const r = resources();
  after(() => r.stopAll());

  it("sends addParams to the primary's /add by the server's names; pins on each cluster by its pinParams", async () => {
    const [a, b, c] = [await r.standIn(), await r.standIn(), await r.standIn()];
    const seal = await r.seal(
      [
        standInCluster(a, {
          addParams: {
            local: true,
            recursive: false,
            hidden: true,
            wrap: false,
            shard: false,
            streamChannels: true,
            noPin: false,
          },
          pinParams: { replicationFactorMin: 1, replicationFactorMax: 3, name: 'sealpost mail', expireIn: '720h' },
        }),
        standInCluster(b, { pinParams: { replicationFactorMin: -1, replicationFactorMax: -1, expireIn: '1m' } }),
        standInCluster(c),
      ],
      { SEAL_PIN_CHECK_INTERVAL: '100ms' },
    );
    const response = await postSeal(seal, rawMessage());
    assert.equal(response.status, 201, await response.clone().text());
    const { id, cid, pins } = await response.json();

    assert.deepEqual(
      addRequests(a).map((req) => req.query),
      [
        'local=true&recursive=false&hidden=true&wrap-with-directory=false&shard=false' +
          '&stream-channels=true&no-pin=false' +
          `&replication-min=1&replication-max=3&name=sealpost+mail%3A${id}&expire-in=720h`,
      ],
      'the pin options ride on /add too, so the first pin already has them, named after the message',
    );
    assert.equal(addRequests(b).length + addRequests(c).length, 0, 'secondaries are not added to');
    assert.deepEqual(
      pinRequests(a).map((req) => [req.path, req.query]),
      [[`/pins/${cid}`, `replication-min=1&replication-max=3&name=sealpost+mail%3A${id}&expire-in=720h`]],
    );
    assert.deepEqual(
      pinRequests(b).map((req) => [req.path, req.query]),
      [[`/pins/${cid}`, `replication-min=-1&replication-max=-1&name=sealpost%3A${id}&expire-in=1m`]],
    );
    assert.deepEqual(
      pinRequests(c).map((req) => [req.path, req.query]),
      [[`/pins/${cid}`, `name=sealpost%3A${id}`]],
    );
    assert.equal(a.pins().get(cid)!.name, `sealpost mail:${id}`, 'the cluster read the name');
    assert.equal(c.pins().get(cid)!.name, `sealpost:${id}`, 'a pin is named after its sealed message');
    assert.ok(Date.parse(b.pins().get(cid)!.expire_at) > Date.now() + 50_000, 'and the expiry');
    assert.deepEqual(
      pins[0],
      { cluster: `127.0.0.1:${a.port}`, status: 'pinned' },
      'the primary holds the content when the seal answers',
    );
    assert.ok(
      pins.slice(1).every((pin: PinView) => pin.status === 'pinning' || pin.status === 'pinned'),
      JSON.stringify(pins),
    );
    const held = await pinsWhen(seal, id, (all) => all.every((pin) => pin.status === 'pinned'));
    assert.deepEqual(
      held.map((pin) => [pin.cluster, pin.status]),
      [a, b, c].map((standIn) => [`127.0.0.1:${standIn.port}`, 'pinned']),
      'the secondaries fetched the blocks from the primary and hold them',
    );
    assert.ok(
      b.requests.some((req) => req.method === 'GET' && req.path === `/pins/${cid}`),
      'the pin was followed with GET /pins/{cid}',
    );
    assert.equal(addRequests(a)[0]!.authorization, false, 'no Basic auth without user and pass');
  });

  it('sends expire-in only for a valid duration of 60s or more; below, missing, invalid: no expiry', async () => {
    const cases: Array<[string | undefined, string]> = [
      ['1m', '&expire-in=1m'],
      ['60s', '&expire-in=60s'],
      ['1h30m', '&expire-in=1h30m'],
      ['59s', ''],
      ['59.999s', ''],
      ['1s', ''],
      ['-2h', ''],
      ['0', ''],
      ['soon', ''],
      ['', ''],
      ['10 minutes', ''],
      [undefined, ''],
    ];
    const standIns = await Promise.all(cases.map(() => r.standIn()));
    const seal = await r.seal(
      standIns.map((standIn, i) =>
        standInCluster(standIn, cases[i]![0] === undefined ? {} : { pinParams: { expireIn: cases[i]![0] } }),
      ),
    );
    const response = await postSeal(seal, rawMessage());
    assert.equal(response.status, 201);
    const { id, cid } = await response.json();
    cases.forEach(([expireIn, query], i) => {
      assert.deepEqual(
        pinRequests(standIns[i]!).map((req) => req.query),
        [`name=sealpost%3A${id}${query}`],
        `expireIn ${JSON.stringify(expireIn)}`,
      );
      const pin = standIns[i]!.pins().get(cid)!;
      assert.equal(
        pin.expire_at === '0001-01-01T00:00:00Z',
        query === '',
        `expireIn ${JSON.stringify(expireIn)}: never expires iff not sent`,
      );
    });
    assert.equal(expireInToSend({ expireIn: '60000ms' }), '60000ms');
    assert.equal(expireInToSend({ expireIn: '59999ms' }), undefined);
  });

  it('reads the JSON array of stream-channels=false, the wrapping directory of wrap=true, the content', async () => {
    const a = await r.standIn();
    const seal = await r.seal([standInCluster(a, { addParams: { streamChannels: false, wrap: true, noPin: true } })], {
      IPFS_PROXY_PORT: String(a.proxyPort),
    });
    const raw = rawMessage({ body: 'wrapped and not streamed' });
    const response = await postSeal(seal, raw);
    assert.equal(response.status, 201, await response.clone().text());
    const { id, cid } = await response.json();
    assert.deepEqual(
      addRequests(a).map((req) => req.query),
      [`wrap-with-directory=true&stream-channels=false&no-pin=true&name=sealpost%3A${id}`],
    );
    assert.ok(a.pins().has(cid), 'the directory is pinned by POST /pins although no-pin skipped the pin at /add');
    const content = await get(seal, `/v1/sealed/${id}/content`);
    assert.equal(content.status, 200);
    assert.equal(sha256(Buffer.from(await content.arrayBuffer())), sha256(raw));
    const cat = a.requests.filter((req) => req.listener === 'proxy').at(-1)!;
    assert.deepEqual(cat.params.arg, [`/ipfs/${cid}/${id}.sealed`]);
  });

  it('fails the seal with 503 on an /add error in the X-Stream-Error trailer, or an unstreamed 500', async () => {
    for (const streamChannels of [true, false]) {
      const a = await r.standIn({ failPins: true });
      const seal = await r.seal([standInCluster(a, { addParams: { streamChannels } })]);
      const response = await postSeal(seal, rawMessage());
      assert.equal(response.status, 503, `stream-channels ${streamChannels}`);
      const error = await response.json();
      assert.match(error.message, /POST \/add .*failPins/, `stream-channels ${streamChannels}: ${error.message}`);
      const rows = await seal.database.db.withSchema('seal').selectFrom('sealed_messages').select('id').execute();
      assert.equal(rows.length, 0, 'nothing recorded');
    }
  });

  it('gives up on a cluster that does not answer within its timeout', async () => {
    const hanging = await r.standIn({ hang: true });
    const seal = await r.seal([standInCluster(hanging, { timeout: '500ms' })]);
    const started = Date.now();
    const response = await postSeal(seal, rawMessage());
    assert.equal(response.status, 503);
    assert.match((await response.json()).message, /no complete answer to POST \/add within 500ms/);
    assert.ok(Date.now() - started < 10_000, 'not the 30s default');
    const ready = await fetch(`${seal.url}/readyz`);
    assert.equal(ready.status, 503, 'not ready while the primary hangs');
  });

  it('records a failed pin on a secondary (down, refusing, hanging), keeps the seal, retries until held', async () => {
    const primary = await r.standIn();
    const refusing = await r.standIn({ failPins: true });
    const hanging = await r.standIn({ hang: true });
    const closed = { port: await refusedPort() };
    const seal = await r.seal(
      [
        standInCluster(primary),
        standInCluster(refusing),
        standInCluster(hanging, { timeout: '300ms' }),
        { host: '127.0.0.1', port: String(closed.port), secure: false },
      ],
      { SEAL_REPIN_INTERVAL: '200ms', SEAL_PIN_CHECK_INTERVAL: '100ms', IPFS_PROXY_PORT: String(primary.proxyPort) },
    );
    const raw = rawMessage();
    const response = await postSeal(seal, raw);
    assert.equal(response.status, 201, 'the seal stands');
    const { id, cid, pins } = await response.json();
    assert.deepEqual(
      pins.map((pin: { cluster: string; status: string }) => [pin.cluster, pin.status]),
      [
        [`127.0.0.1:${primary.port}`, 'pinned'],
        [`127.0.0.1:${refusing.port}`, 'pin_error'],
        [`127.0.0.1:${hanging.port}`, 'pin_error'],
        [`127.0.0.1:${closed.port}`, 'pin_error'],
      ],
    );
    assert.match(pins[1].error, /answered 500: failPins/);
    assert.match(pins[2].error, /within 300ms/);
    assert.match(pins[3].error, /ECONNREFUSED/);

    const metadata = await (await get(seal, `/v1/sealed/${id}`)).json();
    assert.equal(metadata.pins[1].status, 'pin_error');
    assert.ok(metadata.pins[1].nextAttemptAt, 'a retry is scheduled');
    assert.equal((await get(seal, `/v1/sealed/${id}/content`)).status, 200, 'the message reads meanwhile');

    refusing.setFailPins(false);
    hanging.setHang(false);
    const [, refused, , closedPin] = await pinsWhen(seal, id, (all) =>
      all.slice(1, 3).every((pin) => pin.status === 'pinned'),
    );
    const view = await pinsWhen(seal, id, () => true);
    assert.deepEqual(
      view.map((pin) => pin.status),
      ['pinned', 'pinned', 'pinned', 'pin_error'],
    );
    assert.ok(refused!.attempts >= 2);
    assert.equal(refused!.error, undefined, 'the old error is gone');
    assert.ok(refusing.pins().has(cid) && hanging.pins().has(cid), 'the clusters hold the pin now');
    assert.match(closedPin!.error ?? '', /ECONNREFUSED/, 'the closed one keeps failing, and keeps being retried');
    assert.ok(closedPin!.attempts >= 2);
  });

  it('speaks HTTPS with Basic auth to a cluster with a self-signed certificate in IPFS_CLUSTER_CA_FILE', async () => {
    const certificate = await createTestCertificate();
    try {
      const secured = await r.standIn({
        user: 'sealer',
        pass: 's3cret:pass',
        tls: { cert: certificate.cert, key: certificate.key },
        proxyAuth: false,
      });
      const env = {
        IPFS_CLUSTER_PORT: String(secured.port),
        IPFS_CLUSTER_SECURE: 'true',
        IPFS_CLUSTER_USER: 'sealer',
        IPFS_CLUSTER_PASS: 's3cret:pass',
        IPFS_PROXY_PORT: String(secured.proxyPort),
      };
      const seal = await r.sealOn(secured, { ...env, IPFS_CLUSTER_CA_FILE: certificate.certPath });
      assert.equal((await fetch(`${seal.url}/readyz`)).status, 200);
      const raw = rawMessage();
      const response = await postSeal(seal, raw);
      assert.equal(response.status, 201, await response.clone().text());
      const { id } = await response.json();
      const content = await get(seal, `/v1/sealed/${id}/content`);
      assert.equal(content.status, 200, 'read through the plain-HTTP proxy');
      assert.equal(sha256(Buffer.from(await content.arrayBuffer())), sha256(raw));
      const rest = secured.requests.filter((req) => req.listener === 'rest');
      // The read (readiness asks the proxy too: POST /api/v0/version).
      const proxied = secured.requests.filter((req) => req.listener === 'proxy' && req.path === '/api/v0/cat');
      assert.ok(rest.length >= 3 && proxied.length === 1);
      assert.ok(
        rest.every((req) => req.authorization),
        'every REST call carried Basic auth, over HTTPS',
      );
      assert.equal(
        proxied[0]!.authorization,
        false,
        'the password of a secure cluster never travels in clear to the proxy',
      );
      assert.ok(!JSON.stringify(seal.logs).includes('s3cret'), 'the password is never logged');

      const untrusting = await r.sealOn(secured, env);
      const refused = await postSeal(untrusting, rawMessage());
      assert.equal(refused.status, 503);
      assert.match((await refused.json()).message, /HTTPS failed: .*self[- ]signed.*IPFS_CLUSTER_CA_FILE/i);

      const wrongPassword = await r.sealOn(secured, {
        ...env,
        IPFS_CLUSTER_PASS: 'wrong',
        IPFS_CLUSTER_CA_FILE: certificate.certPath,
      });
      const denied = await postSeal(wrongPassword, rawMessage());
      assert.equal(denied.status, 502, 'the cluster refused: not a retryable outage of IPFS, but still 5xx');
      assert.match((await denied.json()).message, /answered 401: unauthorized: access denied/);
    } finally {
      await certificate.remove();
    }
  });

  it('sends Basic credentials to the plain-HTTP IPFS proxy only for a secure: false cluster', async () => {
    const certificate = await createTestCertificate();
    try {
      const credentials = { user: 'sealer', pass: 's3cret:pass' };
      const plain = await r.standIn(credentials);
      const plainSeal = await r.seal([standInCluster(plain, credentials)], {
        IPFS_PROXY_PORT: String(plain.proxyPort),
      });
      const raw = rawMessage();
      const { id } = await (await postSeal(plainSeal, raw)).json();
      const content = await get(plainSeal, `/v1/sealed/${id}/content`);
      assert.equal(content.status, 200, "the proxy's IPFS node checks the credentials and lets the read through");
      assert.equal(sha256(Buffer.from(await content.arrayBuffer())), sha256(raw));
      assert.ok(
        plain.requests.every((req) => req.authorization),
        'REST and proxy alike: they travel in clear to the REST API anyway',
      );

      // A secure cluster whose proxy's IPFS node demands the credentials cannot be read: they are not sent in clear.
      const demanding = await r.standIn({ ...credentials, tls: { cert: certificate.cert, key: certificate.key } });
      const secureSeal = await r.sealOn(demanding, {
        IPFS_CLUSTER_PORT: String(demanding.port),
        IPFS_CLUSTER_SECURE: 'true',
        IPFS_CLUSTER_USER: credentials.user,
        IPFS_CLUSTER_PASS: credentials.pass,
        IPFS_PROXY_PORT: String(demanding.proxyPort),
        IPFS_CLUSTER_CA_FILE: certificate.certPath,
      });
      const sealed = await postSeal(secureSeal, rawMessage());
      assert.equal(sealed.status, 201, 'adding and pinning over HTTPS with the credentials work');
      const refused = await get(secureSeal, `/v1/sealed/${(await sealed.json()).id}/content`);
      assert.equal(refused.status, 503);
      assert.match(
        (await refused.json()).message,
        /answered 403: Kubo RPC Access Denied.*credentials are not sent to its plain-HTTP IPFS proxy/,
      );
      assert.deepEqual(
        demanding.requests.filter((req) => req.listener === 'proxy').map((req) => req.authorization),
        [false],
      );
    } finally {
      await certificate.remove();
    }
  });
});

describe('ClusterClient queries', () => {
  it('maps only the configured fields, in a stable order', () => {
    const client = (settings: Partial<ConstructorParameters<typeof ClusterClient>[0]>) =>
      new ClusterClient(
        { host: 'cluster.example', port: '9094', secure: true, timeout: '30s', ...settings },
        { proxyPort: 9095 },
      );
    assert.equal(client({}).addQuery(), '');
    assert.equal(client({ addParams: { noPin: true, local: false } }).addQuery(), 'local=false&no-pin=true');
    assert.equal(client({ pinParams: { name: 'a&b=c' } }).pinQuery(), 'name=a%26b%3Dc');
    assert.equal(client({ pinParams: { replicationFactorMax: 2 } }).pinQuery(), 'replication-max=2');
    assert.equal(client({ host: '::1' }).name, '[::1]:9094');
  });

  it('takes the IPFS_CLUSTER_* fallback with the default timeout, and names a bad IPFS_CLUSTER_HOST', () => {
    assert.deepEqual(environmentCluster({ host: '[::1]', port: '9094', secure: true }), {
      host: '::1',
      port: '9094',
      secure: true,
      timeout: '30s',
    });
    assert.throws(
      () => environmentCluster({ host: 'https://cluster.example', port: '9094', secure: true }),
      /IPFS_CLUSTER_HOST="https:\/\/cluster\.example" is not valid/,
    );
  });
});

describe('ClusterClient uploads', () => {
  /** A bare HTTP server playing /add: it records how each upload arrived and answers a CID. */
  async function recordingCluster() {
    const { createServer } = await import('node:http');
    const uploads: Array<{ contentLength?: string; transferEncoding?: string; writes: number; body: Buffer }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        uploads.push({
          contentLength: req.headers['content-length'],
          transferEncoding: req.headers['transfer-encoding'],
          writes: chunks.length,
          body: Buffer.concat(chunks),
        });
        res.setHeader('content-type', 'application/json');
        res.end('{"name":"m.sealed","cid":"QmSbY6aPBVaWVNEcp5BJbn6fv2NPZ5rrKqrEHgx2XmUdN5","size":1}\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const client = new ClusterClient(
      { host: '127.0.0.1', port: String(port), secure: false, timeout: '10s' },
      { proxyPort: 1 },
    );
    return { uploads, client, close: () => new Promise((resolve) => server.close(resolve)) };
  }
  async function* pieces(total: number, size: number) {
    for (let sent = 0; sent < total; sent += size) yield Buffer.alloc(Math.min(size, total - sent), sent / size);
  }

  it('sends a small upload whole with Content-Length, a large one chunked in batches; both arrive intact', async () => {
    const cluster = await recordingCluster();
    try {
      await cluster.client.add(pieces(10_240, 100), 'small.sealed');
      await cluster.client.add(pieces(1024 * 1024, 100), 'large.sealed');
      const [small, large] = cluster.uploads;
      assert.equal(small!.transferEncoding, undefined);
      assert.equal(
        Number(small!.contentLength),
        small!.body.length,
        'the whole body in one piece, its length declared',
      );
      assert.equal(large!.contentLength, undefined);
      assert.equal(large!.transferEncoding, 'chunked');
      for (const [upload, total] of [
        [small!, 10_240],
        [large!, 1024 * 1024],
      ] as const) {
        const text = upload.body.toString('latin1');
        const start = text.indexOf('\r\n\r\n') + 4;
        const content = upload.body.subarray(
          start,
          upload.body.length - text.slice(start).length + text.slice(start).lastIndexOf('\r\n--'),
        );
        assert.equal(content.length, total);
        assert.deepEqual(
          content,
          Buffer.concat(
            Array.from({ length: Math.ceil(total / 100) }, (_, i) => Buffer.alloc(Math.min(100, total - i * 100), i)),
          ),
        );
      }
    } finally {
      await cluster.close();
    }
  });
});
