/**
 * The IPFS Cluster stand-in over real HTTP: CIDs checked against Debian's
 * ipfs_cid (Kubo's default CIDs), the REST API's and the proxy's answers, auth,
 * TLS, hanging, persistence and request recording.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startIpfsClusterStandIn, type IpfsClusterStandIn } from './index.ts';

const run = promisify(execFile);
const HELLO_CID = 'Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  body: Buffer;
}

/** One HTTP(S) exchange with node:http, which (unlike fetch) exposes trailers. */
function send(
  url: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: Buffer | Readable;
    ca?: string;
    timeoutMs?: number;
  } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const doRequest = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = doRequest(u, { method: opts.method ?? 'GET', headers: opts.headers, ca: opts.ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, trailers: res.trailers, body: Buffer.concat(chunks) }),
      );
    });
    if (opts.timeoutMs) req.setTimeout(opts.timeoutMs, () => req.destroy(new Error('client timeout')));
    req.on('error', reject);
    if (opts.body instanceof Readable) opts.body.pipe(req);
    else req.end(opts.body);
  });
}

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

/** A multipart/form-data body with one part per file, streamed. */
function multipart(files: Array<{ name: string; data: Buffer }>) {
  const boundary = `----sealpost${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const f of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${encodeURIComponent(f.name)}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      ),
      f.data,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, parts };
}

async function add(
  base: string,
  files: Array<{ name: string; data: Buffer }>,
  query = '',
  headers: Record<string, string> = {},
) {
  const body = multipart(files);
  return send(`${base}/add${query}`, {
    method: 'POST',
    headers: { 'Content-Type': body.contentType, ...headers },
    body: Readable.from(body.parts),
  });
}

const ndjson = (body: Buffer) =>
  body
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Debian's ipfs_cid: Kubo's default CIDv0 of a file. */
async function ipfsCid(data: Buffer, dir: string): Promise<string> {
  const file = join(dir, `cid-${randomBytes(4).toString('hex')}`);
  await writeFile(file, data);
  const { stdout } = await run('/usr/bin/ipfs_cid', [file], { maxBuffer: 1 << 20 });
  await rm(file);
  return (JSON.parse(stdout) as { CIDv0: string }).CIDv0;
}

/** Deterministic pseudo-random bytes (xorshift32), so a failure can be reproduced. */
function pseudoRandom(size: number, seed = 0x9e3779b9): Buffer {
  const buf = Buffer.alloc(size + 3);
  let x = seed >>> 0;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    buf.writeUInt32LE(x, i);
  }
  return buf.subarray(0, size);
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('IPFS Cluster stand-in', () => {
  let dir: string;
  let s: IpfsClusterStandIn;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ipfs-cluster-standin-'));
    s = await startIpfsClusterStandIn({ port: 0, proxyPort: 0, dataDir: join(dir, 'data') });
  });
  after(async () => {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('binds to 127.0.0.1 by default and answers /id and /version like the cluster', async () => {
    assert.match(s.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(s.proxyUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    const version = await send(`${s.url}/version`);
    assert.equal(version.status, 200);
    assert.equal(version.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(version.body.toString()), { version: '1.1.6' });
    const id = JSON.parse((await send(`${s.url}/id`)).body.toString());
    assert.match(id.id, /^12D3KooW/);
    assert.equal(id.peername, 'sealpost-devstack');
    assert.equal(id.version, '1.1.6');
    assert.deepEqual(id.cluster_peers, [id.id]);
    const missing = await send(`${s.url}/nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(JSON.parse(missing.body.toString()), { code: 404, message: 'not found' });
  });

  const sizes: Array<[string, number]> = [
    ['empty', 0],
    ['256 KiB', 262144],
    ['256 KiB + 1', 262145],
    ['50 MiB + 7 (two-level tree: over 174 x 256 KiB)', 50 * 1024 * 1024 + 7],
  ];

  test('"hello world" gets Kubo\'s CID and cats back byte for byte', async () => {
    const data = Buffer.from('hello world');
    assert.equal(await ipfsCid(data, dir), HELLO_CID);
    const res = await add(s.url, [{ name: 'hello.txt', data }]);
    assert.equal(res.status, 200);
    assert.equal(res.trailers['x-stream-error'], undefined);
    assert.deepEqual(ndjson(res.body), [
      {
        name: 'hello.txt',
        cid: HELLO_CID,
        size: 19,
        allocations: [JSON.parse((await send(`${s.url}/id`)).body.toString()).id],
      },
    ]);
    const cat = await send(`${s.proxyUrl}/api/v0/cat?arg=${HELLO_CID}`, { method: 'POST' });
    assert.equal(cat.status, 200);
    assert.equal(cat.headers['x-content-length'], '11');
    assert.equal(cat.headers['x-stream-output'], '1');
    assert.deepEqual(cat.body, data);
  });

  for (const [label, size] of sizes) {
    test(`CID equals ipfs_cid and cat round-trips: ${label}`, async () => {
      const data = pseudoRandom(size, size + 1);
      const expected = await ipfsCid(data, dir);
      const res = await add(s.url, [{ name: 'f.bin', data }]);
      assert.equal(res.status, 200);
      assert.equal(res.trailers['x-stream-error'], undefined);
      const [out] = ndjson(res.body);
      assert.equal(out?.cid, expected);
      assert.ok(s.pins().has(expected), 'adding pins the root');
      const cat = await send(`${s.proxyUrl}/api/v0/cat?arg=/ipfs/${expected}`, { method: 'POST' });
      assert.equal(cat.status, 200);
      assert.equal(cat.body.length, size);
      assert.equal(sha256(cat.body), sha256(data));
    });
  }

  test('cat honours offset/length; GET is 405; unknown and invalid CIDs get Kubo errors', async () => {
    const part = await send(`${s.proxyUrl}/api/v0/cat?arg=${HELLO_CID}&offset=6&length=3`, { method: 'POST' });
    assert.equal(part.body.toString(), 'wor');
    const get = await send(`${s.proxyUrl}/api/v0/cat?arg=${HELLO_CID}`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.allow, 'OPTIONS, POST');
    const unknown = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG';
    const missing = await send(`${s.proxyUrl}/api/v0/cat?arg=${unknown}`, { method: 'POST' });
    assert.equal(missing.status, 500);
    const err = JSON.parse(missing.body.toString());
    assert.equal(err.Code, 0);
    assert.equal(err.Type, 'error');
    assert.match(err.Message, new RegExp(`could not find ${unknown}`));
    const invalid = await send(`${s.proxyUrl}/api/v0/cat?arg=not-a-cid`, { method: 'POST' });
    assert.equal(invalid.status, 500);
    assert.equal(JSON.parse(invalid.body.toString()).Type, 'error');
  });

  test('add answers ndjson by default and a JSON array with stream-channels=false', async () => {
    const files = [
      { name: 'a.txt', data: Buffer.from('hello world') },
      { name: 'b.txt', data: Buffer.from('b') },
    ];
    const streamed = await add(s.url, files, '?wrap-with-directory=true');
    assert.equal(streamed.headers['x-chunked-output'], '1');
    assert.equal(streamed.headers.trailer, 'X-Stream-Error');
    assert.equal(streamed.headers.connection, 'close');
    const lines = ndjson(streamed.body);
    assert.deepEqual(
      lines.map((l) => [l.name, l.cid]),
      [
        ['a.txt', HELLO_CID],
        ['b.txt', 'QmQLd9KEkw5eLKfr9VwfthiWbuqa9LXhRchWqD4kRPPWEf'],
        ['', lines[2]?.cid],
      ],
    );
    assert.ok(s.pins().has(String(lines[2]?.cid)), 'the wrapping directory is what gets pinned');

    const array = await add(s.url, files.slice(0, 1), '?stream-channels=false&no-pin=true');
    assert.equal(array.status, 200);
    assert.equal(array.headers['x-chunked-output'], undefined);
    const parsed = JSON.parse(array.body.toString());
    assert.ok(Array.isArray(parsed));
    assert.deepEqual(
      parsed.map((o: { name: string; cid: string; size: number }) => [o.name, o.cid, o.size]),
      [['a.txt', HELLO_CID, 19]],
    );
  });

  test('no-pin=true adds without pinning; CIDv1 gives raw leaves like Kubo', async () => {
    const data = Buffer.from(`unpinned ${Date.now()}`);
    const res = await add(s.url, [{ name: 'x', data }], '?no-pin=true&cid-version=1');
    const [out] = ndjson(res.body);
    assert.match(String(out?.cid), /^bafkrei/);
    assert.equal(s.pins().has(String(out?.cid)), false);
  });

  test('a malformed multipart body is reported in the X-Stream-Error trailer', async () => {
    const boundary = 'xyzzy';
    const res = await send(`${s.url}/add`, {
      method: 'POST',
      headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      body: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\ntruncated`),
    });
    assert.equal(res.status, 200);
    assert.ok(res.trailers['x-stream-error'], 'a non-empty X-Stream-Error trailer');

    const notMultipart = await send(`${s.url}/add`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: Buffer.from('x'),
    });
    assert.equal(notMultipart.status, 400);
    assert.deepEqual(JSON.parse(notMultipart.body.toString()), {
      code: 400,
      message: "request Content-Type isn't multipart/form-data",
    });
    const badParam = await add(s.url, [{ name: 'f', data: Buffer.from('x') }], '?local=maybe');
    assert.equal(badParam.status, 400);
    assert.deepEqual(JSON.parse(badParam.body.toString()), { code: 400, message: 'parameter local invalid' });
  });

  test('pin, get, list and unpin a CID with the real JSON shapes', async () => {
    const cid = HELLO_CID;
    const pinned = await send(`${s.url}/pins/${cid}?name=greeting&replication-min=1&replication-max=1&meta-kind=test`, {
      method: 'POST',
    });
    assert.equal(pinned.status, 200);
    const pin = JSON.parse(pinned.body.toString());
    assert.equal(pin.cid, cid);
    assert.equal(pin.type, 'pin');
    assert.equal(pin.name, 'greeting');
    assert.equal(pin.replication_factor_min, 1);
    assert.equal(pin.replication_factor_max, 1);
    assert.equal(pin.max_depth, -1);
    assert.equal(pin.mode, 'recursive');
    assert.equal(pin.reference, null);
    assert.equal(pin.expire_at, '0001-01-01T00:00:00Z');
    assert.deepEqual(pin.metadata, { kind: 'test' });
    assert.equal(pin.allocations.length, 1);

    const status = JSON.parse((await send(`${s.url}/pins/${cid}`)).body.toString());
    assert.equal(status.cid, cid);
    assert.equal(status.name, 'greeting');
    assert.deepEqual(
      Object.values(status.peer_map).map((p) => (p as { status: string }).status),
      ['pinned'],
    );

    const list = await send(`${s.url}/pins`);
    assert.equal(list.status, 200);
    assert.ok(ndjson(list.body).some((g) => g.cid === cid));
    assert.equal(list.trailers['x-stream-error'], '');

    const unpinned = await send(`${s.url}/pins/${cid}`, { method: 'DELETE' });
    assert.equal(unpinned.status, 200);
    assert.equal(JSON.parse(unpinned.body.toString()).cid, cid);
    assert.equal(s.pins().has(cid), false);
    const after = JSON.parse((await send(`${s.url}/pins/${cid}`)).body.toString());
    assert.equal((Object.values(after.peer_map)[0] as { status: string }).status, 'unpinned');
    const again = await send(`${s.url}/pins/${cid}`, { method: 'DELETE' });
    assert.equal(again.status, 404);
    assert.deepEqual(JSON.parse(again.body.toString()), { code: 404, message: 'pin is not part of the pinset' });

    const invalid = await send(`${s.url}/pins/not-a-cid`, { method: 'POST' });
    assert.equal(invalid.status, 400);
    assert.match(JSON.parse(invalid.body.toString()).message, /^error decoding Cid: /);
  });

  test('expire-in under 1s is rejected; a valid one sets expire_at', async () => {
    const short = await send(`${s.url}/pins/${HELLO_CID}?expire-in=500ms`, { method: 'POST' });
    assert.equal(short.status, 400);
    assert.deepEqual(JSON.parse(short.body.toString()), { code: 400, message: 'expire-in duration too short' });
    const garbage = await send(`${s.url}/pins/${HELLO_CID}?expire-in=soon`, { method: 'POST' });
    assert.equal(garbage.status, 400);
    assert.equal(
      JSON.parse(garbage.body.toString()).message,
      'expire-in cannot be parsed: time: invalid duration "soon"',
    );
    assert.equal(s.pins().has(HELLO_CID), false);

    const before = Date.now();
    const ok = await send(`${s.url}/pins/${HELLO_CID}?expire-in=1h30m`, { method: 'POST' });
    assert.equal(ok.status, 200);
    const expireAt = Date.parse(JSON.parse(ok.body.toString()).expire_at);
    assert.ok(Math.abs(expireAt - (before + 90 * 60_000)) < 5_000, 'expire_at is about 1h30m from now');
  });

  test('failPins makes pins answer 500 and the add report the failed pin', async () => {
    s.setFailPins(true);
    try {
      const pin = await send(`${s.url}/pins/${HELLO_CID}`, { method: 'POST' });
      assert.equal(pin.status, 500);
      assert.equal(JSON.parse(pin.body.toString()).code, 500);
      const added = await add(s.url, [{ name: 'f', data: Buffer.from('fail me') }]);
      assert.equal(added.status, 200);
      assert.match(added.trailers['x-stream-error'] ?? '', /failPins/);
    } finally {
      s.setFailPins(false);
    }
  });

  test('requests records the exact query string', async () => {
    const query = 'name=a%20b+c&replication-min=1&replication-max=1&meta-x=%2F';
    await send(`${s.url}/pins/${HELLO_CID}?${query}`, { method: 'POST' });
    const last = s.requests.at(-1)!;
    assert.equal(last.listener, 'rest');
    assert.equal(last.method, 'POST');
    assert.equal(last.path, `/pins/${HELLO_CID}`);
    assert.equal(last.query, query);
    assert.deepEqual(last.params.name, ['a b c']);
    assert.deepEqual(last.params['meta-x'], ['/']);
    assert.equal(last.authorization, false);
    assert.equal(s.pins().get(HELLO_CID)?.name, 'a b c');
  });

  test('hang: a client with a 500 ms timeout gives up', async () => {
    s.setHang(true);
    try {
      const t0 = Date.now();
      await assert.rejects(send(`${s.url}/version`, { timeoutMs: 500 }), /client timeout/);
      assert.ok(Date.now() - t0 >= 450);
    } finally {
      s.setHang(false);
    }
    assert.equal((await send(`${s.url}/version`, { timeoutMs: 2000 })).status, 200);
  });
});

/**
 * Unpinning and pinning by IPFS path, as `ipfs-cluster-ctl pin rm` / `pin add` send them. The answers
 * are the real IPFS Cluster v1.1.6's, taken from it with Kubo behind (the conformance suite checks the
 * main ones against it on every run).
 */
describe('IPFS Cluster stand-in: unpinning as the real cluster answers it', () => {
  let dir: string;
  let s: IpfsClusterStandIn;
  const json = (reply: Reply) => ndjson(reply.body);
  /** Adds one file wrapped in a directory (only the directory is pinned); gives both CIDs. */
  const addWrapped = async (name: string) => {
    const reply = await add(s.url, [{ name, data: randomBytes(900) }], '?wrap-with-directory=true');
    const [file, directory] = json(reply).map((line) => String(line.cid));
    return { file: file!, directory: directory! };
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ipfs-cluster-unpin-'));
    s = await startIpfsClusterStandIn({ port: 0, proxyPort: 0, dataDir: join(dir, 'data') });
  });
  after(async () => {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('unpins by /ipfs/{cid} and /ipld/{cid}; a path inside a directory unpins what it names', async () => {
    const first = await addWrapped('first.sealed');
    const byIpfs = await send(`${s.url}/pins/ipfs/${first.directory}`, { method: 'DELETE' });
    assert.equal(byIpfs.status, 200);
    assert.equal(json(byIpfs)[0]!.cid, first.directory);
    assert.equal(s.pins().has(first.directory), false);
    assert.deepEqual(json(await send(`${s.url}/pins/ipld/${first.directory}`, { method: 'DELETE' })), [
      { code: 404, message: 'pin is not part of the pinset' },
    ]);

    const second = await addWrapped('second.sealed');
    assert.equal((await send(`${s.url}/pins/ipfs/${second.file}`, { method: 'POST' })).status, 200);
    const inside = await send(`${s.url}/pins/ipfs/${second.directory}/second.sealed`, { method: 'DELETE' });
    assert.equal(inside.status, 200);
    assert.equal(json(inside)[0]!.cid, second.file, 'the path resolves to the file');
    assert.equal(s.pins().has(second.file), false);
    assert.equal(s.pins().has(second.directory), true, 'the directory stays pinned');
  });

  test('a path that does not resolve is 500 with the IPFS error; a malformed one 400', async () => {
    const { directory } = await addWrapped('third.sealed');
    const missing = await send(`${s.url}/pins/ipfs/${directory}/nope`, { method: 'DELETE' });
    assert.equal(missing.status, 500);
    assert.deepEqual(json(missing), [
      {
        code: 500,
        message:
          `IPFS error (resolve?arg=%2Fipfs%2F${directory}%2Fnope). Code: 500. ` +
          `Message: no link named "nope" under ${directory}`,
      },
    ]);
    const ipns = await send(`${s.url}/pins/ipns/${directory}`, { method: 'DELETE' });
    assert.deepEqual(json(ipns), [
      {
        code: 500,
        message: `IPFS error (resolve?arg=%2Fipns%2F${directory}). Code: 500. Message: could not resolve name`,
      },
    ]);
    const malformed = await send(`${s.url}/pins/ipfs/Qm-not-a-cid`, { method: 'DELETE' });
    assert.equal(malformed.status, 400);
    assert.deepEqual(json(malformed), [
      {
        code: 400,
        message: 'error parsing path: invalid path "/ipfs/Qm-not-a-cid": invalid cid: selected encoding not supported',
      },
    ]);
    assert.deepEqual(json(await send(`${s.url}/pins/x`, { method: 'DELETE' })), [
      { code: 400, message: 'error decoding Cid: invalid cid: cid too short' },
    ]);
    assert.equal((await send(`${s.url}/pins/ipfs/${directory}`, { method: 'GET' })).status, 405);
    assert.equal(s.pins().has(directory), true, 'nothing was unpinned');
  });

  test('bad pin options on DELETE: 400 with the error, and unpinned all the same, the outcome after it', async () => {
    const { directory } = await addWrapped('options.sealed');
    const reply = await send(`${s.url}/pins/${directory}?replication-min=abc`, { method: 'DELETE' });
    assert.equal(reply.status, 400);
    const [error, outcome] = json(reply);
    assert.deepEqual(error, { code: 400, message: 'parameter replication-min invalid' });
    assert.equal(outcome!.cid, directory);
    assert.equal(s.pins().has(directory), false);
    const again = await send(`${s.url}/pins/ipfs/${directory}?expire-in=soon`, { method: 'DELETE' });
    assert.equal(again.status, 400);
    assert.deepEqual(json(again), [
      { code: 400, message: 'expire-in cannot be parsed: time: invalid duration "soon"' },
      { code: 404, message: 'pin is not part of the pinset' },
    ]);
  });

  test('answers the pin as stored: whole seconds, null metadata, origins []; the CID then reads unpinned', async () => {
    const { file } = await addWrapped('stored.sealed');
    const pinned = json(await send(`${s.url}/pins/ipfs/${file}?meta-kind=sealed`, { method: 'POST' }))[0]!;
    assert.equal(pinned.cid, file);
    assert.deepEqual(pinned.metadata, { kind: 'sealed' });
    assert.equal(pinned.origins, null, 'POST answers the pin before it is stored');
    const stored = json(await send(`${s.url}/allocations/${file}`))[0]!;
    assert.match(String(stored.timestamp), /:\d\dZ$/, 'whole seconds');
    assert.deepEqual(stored.origins, []);
    const unpinned = await send(`${s.url}/pins/${file}`, { method: 'DELETE' });
    assert.deepEqual(json(unpinned), [stored]);

    const info = json(await send(`${s.url}/pins/${file}`))[0]!;
    assert.deepEqual([info.allocations, info.origins, info.metadata], [[], null, null]);
    assert.ok(Date.now() - Date.parse(String(info.created)) < 60_000, 'created: the time of the answer');
    const status = Object.values(info.peer_map as Record<string, { status: string }>)[0]!.status;
    assert.equal(status, 'unpinned');
    const withoutMetadata = await addWrapped('plain.sealed');
    const plain = json(await send(`${s.url}/allocations/${withoutMetadata.directory}`))[0]!;
    assert.equal(plain.metadata, null);
  });

  test('an emptied pinset lists as 204 on GET /pins and GET /allocations', async () => {
    for (const cid of s.pins().keys()) {
      assert.equal((await send(`${s.url}/pins/${cid}`, { method: 'DELETE' })).status, 200);
    }
    for (const path of ['/pins', '/allocations']) {
      const reply = await send(`${s.url}${path}`);
      assert.equal(reply.status, 204, path);
      assert.equal(reply.body.length, 0);
    }
  });
});

describe('IPFS Cluster stand-in with Basic auth and TLS', () => {
  let dir: string;
  let s: IpfsClusterStandIn;
  let cert: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ipfs-cluster-standin-tls-'));
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-days',
      '1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ]);
    cert = await readFile(join(dir, 'cert.pem'), 'utf8');
    s = await startIpfsClusterStandIn({
      port: 0,
      proxyPort: 0,
      dataDir: join(dir, 'data'),
      user: 'seal',
      pass: 'p4ss',
      tls: { cert, key: await readFile(join(dir, 'key.pem')) },
    });
  });
  after(async () => {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('TLS: a client trusting the self-signed cert connects; one that does not is refused', async () => {
    assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ok = await send(`${s.url}/version`, { ca: cert, headers: { Authorization: basic('seal', 'p4ss') } });
    assert.equal(ok.status, 200);
    await assert.rejects(send(`${s.url}/version`), (err: NodeJS.ErrnoException) => {
      assert.match(String(err.code), /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/);
      return true;
    });
  });

  test('Basic auth: 401 without or with wrong credentials, 200 with the right ones', async () => {
    const none = await send(`${s.url}/id`, { ca: cert });
    assert.equal(none.status, 401);
    assert.deepEqual(JSON.parse(none.body.toString()), { code: 401, message: 'unauthorized: no auth provided' });
    assert.match(String(none.headers['www-authenticate']), /Basic realm="Restricted IPFS Cluster API"/);
    const wrong = await send(`${s.url}/id`, { ca: cert, headers: { Authorization: basic('seal', 'nope') } });
    assert.equal(wrong.status, 401);
    assert.deepEqual(JSON.parse(wrong.body.toString()), { code: 401, message: 'unauthorized: access denied' });
    const right = await send(`${s.url}/id`, { ca: cert, headers: { Authorization: basic('seal', 'p4ss') } });
    assert.equal(right.status, 200);
    assert.equal(s.requests.at(-1)?.authorization, true);
  });

  test('the proxy answers like Kubo with API.Authorizations: 403 without credentials', async () => {
    const data = Buffer.from('secret bytes');
    const body = multipart([{ name: 's', data }]);
    const res = await send(`${s.url}/add`, {
      method: 'POST',
      ca: cert,
      headers: { 'Content-Type': body.contentType, Authorization: basic('seal', 'p4ss') },
      body: Readable.from(body.parts),
    });
    const cid = String(ndjson(res.body)[0]?.cid);
    const denied = await send(`${s.proxyUrl}/api/v0/cat?arg=${cid}`, { method: 'POST' });
    assert.equal(denied.status, 403);
    assert.match(denied.body.toString(), /^Kubo RPC Access Denied/);
    const allowed = await send(`${s.proxyUrl}/api/v0/cat?arg=${cid}`, {
      method: 'POST',
      headers: { Authorization: basic('seal', 'p4ss') },
    });
    assert.equal(allowed.status, 200);
    assert.deepEqual(allowed.body, data);
  });

  test('proxyAuth false: REST API keeps Basic auth, proxy serves cat openly (no API.Authorizations)', async () => {
    const open = await startIpfsClusterStandIn({
      port: 0,
      proxyPort: 0,
      dataDir: join(dir, 'open'),
      user: 'seal',
      pass: 'p4ss',
      proxyAuth: false,
    });
    try {
      const data = Buffer.from('readable through an open proxy');
      const upload = (authorization?: string) => {
        const body = multipart([{ name: 'o', data }]);
        const headers = {
          'Content-Type': body.contentType,
          ...(authorization ? { Authorization: authorization } : {}),
        };
        return send(`${open.url}/add`, { method: 'POST', headers, body: Readable.from(body.parts) });
      };
      assert.equal((await upload()).status, 401);
      const added = await upload(basic('seal', 'p4ss'));
      assert.equal(added.status, 200);
      const cat = await send(`${open.proxyUrl}/api/v0/cat?arg=${String(ndjson(added.body)[0]?.cid)}`, {
        method: 'POST',
      });
      assert.equal(cat.status, 200);
      assert.deepEqual(cat.body, data);
    } finally {
      await open.close();
    }
  });
});

describe('IPFS Cluster stand-in persistence', () => {
  test('blocks, pins and the peer ID survive close and restart with the same dataDir', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ipfs-cluster-standin-restart-'));
    try {
      const data = pseudoRandom(300_000, 42);
      let s = await startIpfsClusterStandIn({ port: 0, proxyPort: 0, dataDir: dir });
      const cid = String(ndjson((await add(s.url, [{ name: 'keep', data }], '?name=kept')).body)[0]?.cid);
      const id = JSON.parse((await send(`${s.url}/id`)).body.toString()).id;
      await s.close();

      s = await startIpfsClusterStandIn({ port: 0, proxyPort: 0, dataDir: dir });
      try {
        assert.equal(s.pins().get(cid)?.name, 'kept');
        assert.equal(JSON.parse((await send(`${s.url}/id`)).body.toString()).id, id);
        const cat = await send(`${s.proxyUrl}/api/v0/cat?arg=${cid}`, { method: 'POST' });
        assert.equal(cat.status, 200);
        assert.deepEqual(cat.body, data);
      } finally {
        await s.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
