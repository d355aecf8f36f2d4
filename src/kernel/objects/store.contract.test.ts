/**
 * One contract for every ObjectStore driver, run against local disk and against a real S3 server
 * (OpenStack Swift + s3api, started once for this file). Driver-specific tests follow the contract.
 */
import assert from 'node:assert/strict';
import { AsyncResource, createHook, executionAsyncId } from 'node:async_hooks';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, afterEach, before, describe, it } from 'node:test';
import { startS3Server, uniqueBucket, type S3TestServer } from '../../../test/support/s3-server.ts';
import { AppError } from '../errors.ts';
import { createLocalObjectStore, LOCAL_TEMP_DIR } from './local.ts';
import { createS3ObjectStore, type S3ObjectStore } from './s3.ts';
import { ObjectNotFoundError, STORE_UNAVAILABLE, type ObjectStore } from './store.ts';

const MiB = 1024 * 1024;

interface DriverUnderTest {
  name: string;
  /** A fresh, empty store for one test. */
  create(): Promise<ObjectStore>;
  /** A store whose backend cannot be reached: a call that did any I/O would fail with a non-400 error. */
  createUnreachable(): ObjectStore;
}

/** A stream of `size` random bytes of unknown length, hashed as it is produced; can fail at `failAt`. */
function generatedStream(size: number, failAt?: number): { stream: Readable; sha256: () => string } {
  const hash = createHash('sha256');
  let produced = 0;
  const stream = new Readable({
    read() {
      if (failAt !== undefined && produced >= failAt) {
        this.destroy(new Error('source failed halfway'));
        return;
      }
      if (produced >= size) {
        this.push(null);
        return;
      }
      const chunk = randomBytes(Math.min(64 * 1024, size - produced));
      produced += chunk.length;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { stream, sha256: () => hash.digest('hex') };
}

async function sha256Of(stream: Readable): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

/** A 503 AppError whose logged cause names `detail` (an S3 error code, or what went wrong). */
function unavailableWith(error: unknown, detail: string): boolean {
  if (!(error instanceof AppError) || error.status !== 503) return false;
  return String((error.cause as Error | undefined)?.message).includes(detail);
}

async function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

const isBadRequest = (error: unknown) => error instanceof AppError && error.status === 400;

function objectStoreContract(driver: DriverUnderTest): void {
  describe(`ObjectStore contract: ${driver.name}`, () => {
    const opened: ObjectStore[] = [];
    const fresh = async () => {
      const store = await driver.create();
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });

    it('round-trips a Buffer, a string and a stream of unknown length', async () => {
      const store = await fresh();
      const buffer = randomBytes(1000);
      assert.equal((await store.put('rt/buffer.bin', buffer)).size, 1000);
      const back = await sha256Of(await store.get('rt/buffer.bin'));
      assert.equal(back.sha256, createHash('sha256').update(buffer).digest('hex'));

      const str = 'héllo ✉ sealed';
      assert.equal((await store.put('rt/string.txt', str, { contentType: 'text/plain' })).size, Buffer.byteLength(str));
      assert.equal(await text(await store.get('rt/string.txt')), str);

      // Mixed string and Buffer chunks, no contentLength given.
      const info = await store.put('rt/stream', Readable.from(['part one, ', Buffer.from('part two')]));
      assert.equal(info.size, 18);
      assert.equal(await text(await store.get('rt/stream')), 'part one, part two');
      assert.equal((await store.head('rt/stream'))?.size, 18);

      // An empty stream and an empty Buffer are valid, empty objects.
      assert.equal((await store.put('rt/empty', Readable.from([]))).size, 0);
      assert.equal(await text(await store.get('rt/empty')), '');
      assert.equal((await store.put('rt/empty-buffer', Buffer.alloc(0))).size, 0);
      assert.equal(await text(await store.get('rt/empty-buffer')), '');
    });

    it('streams a 20 MB body of unknown length and reads back identical bytes', async () => {
      const store = await fresh();
      const size = 20 * MiB + 12_345; // Not a multiple of the 5 MiB part size: a short last part.
      const source = generatedStream(size);
      const info = await store.put('big/blob', source.stream);
      assert.equal(info.size, size);
      assert.equal((await store.head('big/blob'))?.size, size);
      const back = await sha256Of(await store.get('big/blob'));
      assert.equal(back.size, size);
      assert.equal(back.sha256, source.sha256());
    });

    it('a stream that fails halfway rejects and stores nothing under the key', async () => {
      const store = await fresh();
      const { stream } = generatedStream(12 * MiB, 9 * MiB); // Past the first 5 MiB part for S3.
      await assert.rejects(store.put('broken/blob', stream), /source failed halfway/);
      assert.equal(await store.head('broken/blob'), undefined);
      assert.deepEqual(await collect(store.list('broken/')), []);
    });

    it('a declared contentLength that the body does not match is refused', async () => {
      const store = await fresh();
      await assert.rejects(
        store.put('len/short', Readable.from([Buffer.from('abc')]), { contentLength: 4 }),
        isBadRequest,
      );
      await assert.rejects(
        store.put('len/long', Readable.from([Buffer.from('abcde')]), { contentLength: 4 }),
        isBadRequest,
      );
      await assert.rejects(store.put('len/buf', Buffer.from('abc'), { contentLength: 4 }), isBadRequest);
      assert.deepEqual(await collect(store.list('len/')), []);
      assert.equal((await store.put('len/ok', Readable.from([Buffer.from('abcd')]), { contentLength: 4 })).size, 4);
    });

    it('head of a missing key is undefined; get of one rejects with ObjectNotFoundError', async () => {
      const store = await fresh();
      assert.equal(await store.head('missing/key'), undefined);
      await assert.rejects(store.get('missing/key'), (error: unknown) => {
        assert.ok(error instanceof ObjectNotFoundError);
        assert.equal(error.status, 404);
        assert.equal(error.key, 'missing/key');
        return true;
      });
    });

    it('getBytes gives a small object whole, nothing past its bound, and ObjectNotFoundError for none', async () => {
      const store = await fresh();
      const body = randomBytes(10_240);
      await store.put('whole/small', body);
      await store.put('whole/empty', Buffer.alloc(0));
      assert.deepEqual(await store.getBytes('whole/small', 10_240), body);
      assert.deepEqual(await store.getBytes('whole/small', 1024 * 1024), body);
      assert.equal(await store.getBytes('whole/small', 10_239), undefined);
      assert.equal((await store.getBytes('whole/empty', 10))?.length, 0);
      // Larger than the bound: still there for a stream.
      assert.equal((await sha256Of(await store.get('whole/small'))).size, 10_240);
      // "whole" holds other keys: a folder on disk, a prefix in S3, an object in neither.
      for (const key of ['whole/missing', 'whole']) {
        await assert.rejects(store.getBytes(key, 1024), (error: unknown) => error instanceof ObjectNotFoundError);
      }
    });

    it('delete is idempotent and the object is gone afterwards', async () => {
      const store = await fresh();
      await store.delete('never/existed');
      await store.put('del/me', 'bye');
      await store.delete('del/me');
      await store.delete('del/me');
      assert.equal(await store.head('del/me'), undefined);
      await assert.rejects(store.get('del/me'), ObjectNotFoundError);
      assert.deepEqual(await collect(store.list('')), []);
    });

    it('deleteMany deletes every key given, more than a call takes, missing ones included, nothing else', async () => {
      const store = await fresh();
      const keys = Array.from({ length: 25 }, (_, i) => `bulk/${String(i).padStart(4, '0')}`);
      await Promise.all(keys.map((key) => store.put(key, 'x')));
      await store.put('keep/me', 'stay');
      await store.deleteMany([...keys, 'bulk/never-existed']);
      assert.deepEqual(
        (await collect(store.list(''))).map((object) => object.key),
        ['keep/me'],
      );
      await store.deleteMany([]);
      await assert.rejects(store.deleteMany(['ok/key', '../escape']), isBadRequest, 'keys are checked before any I/O');
    });

    it('overwriting a key replaces the object', async () => {
      const store = await fresh();
      await store.put('over/k', 'first version, longer');
      await store.put('over/k', Readable.from([Buffer.from('v2')]));
      assert.equal(await text(await store.get('over/k')), 'v2');
      assert.equal((await store.head('over/k'))?.size, 2);
      assert.deepEqual(
        (await collect(store.list('over/'))).map((o) => o.key),
        ['over/k'],
      );
    });

    it('lists exactly the objects under a prefix, in key order, across pages', async () => {
      const store = await fresh();
      // Names that sort differently as bytes than folder-by-folder: '-' < '.' < '/' < '0' < 'A' < '_' < 'a'.
      const inside = [
        'p/a-b',
        'p/a.c',
        'p/a/x',
        'p/a/y/z',
        'p/a0',
        'p/B',
        'p/_u',
        'p/b',
        ...Array.from({ length: 22 }, (_, i) => `p/n/${String(i).padStart(2, '0')}`),
      ];
      const outside = ['p-x', 'p0', 'pp/x', 'q/p/x', 'top'];
      // Put in a scrambled order so a store that lists in insertion order would fail.
      const all = [...inside, ...outside].sort(() => Math.random() - 0.5);
      for (let i = 0; i < all.length; i += 8) {
        await Promise.all(all.slice(i, i + 8).map((key) => store.put(key, key)));
      }
      const listed = await collect(store.list('p/'));
      assert.deepEqual(
        listed.map((o) => o.key),
        [...inside].sort(),
      );
      for (const item of listed) assert.equal(item.size, Buffer.byteLength(item.key));
      assert.deepEqual(
        (await collect(store.list(''))).map((o) => o.key),
        [...inside, ...outside].sort(),
      );
      assert.deepEqual(
        (await collect(store.list('p/a/'))).map((o) => o.key),
        ['p/a/x', 'p/a/y/z'],
      );
      assert.deepEqual(await collect(store.list('nothing/here/')), []);
    });

    it('refuses invalid keys and prefixes before any I/O', async () => {
      // The unreachable store would fail any real call with a network or disk error, not a 400.
      const store = driver.createUnreachable();
      try {
        for (const key of ['../x', '/abs', 'a\\b', 'a/../b', '', 'a//b', 'a/', './a', 'nul\0']) {
          await assert.rejects(store.put(key, 'x'), isBadRequest, `put ${JSON.stringify(key)}`);
          await assert.rejects(store.get(key), isBadRequest, `get ${JSON.stringify(key)}`);
          await assert.rejects(store.head(key), isBadRequest, `head ${JSON.stringify(key)}`);
          await assert.rejects(store.delete(key), isBadRequest, `delete ${JSON.stringify(key)}`);
        }
        for (const prefix of ['../', '/abs/', 'a\\b/', 'a/../b/', 'no-slash', '/']) {
          await assert.rejects(collect(store.list(prefix)), isBadRequest, `list ${JSON.stringify(prefix)}`);
        }
      } finally {
        await store.close();
      }
    });

    it('ping succeeds on a working store, fails fast on an unreachable one, revealing nothing of setup', async () => {
      const store = await fresh();
      await store.ping();
      const unreachable = driver.createUnreachable();
      const started = Date.now();
      await assert.rejects(unreachable.ping(), (error: unknown) => {
        assert.ok(error instanceof AppError && error.status === 503, String(error));
        // No folder path, bucket, endpoint or SDK error name in what the client sees; all of it in the log.
        assert.equal(error.message, STORE_UNAVAILABLE);
        assert.match(String((error.cause as Error).message), /\/dev\/null\/objects|unreachable/);
        return true;
      });
      assert.ok(Date.now() - started < 5_000, 'ping of an unreachable store took too long');
      await unreachable.close();
    });
  });
}

// ---- local disk -------------------------------------------------------------------------------------

const localDirs: string[] = [];
after(async () => {
  await Promise.all(localDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});
async function localStore(): Promise<{ store: ObjectStore; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'sealpost-objects-'));
  localDirs.push(dir);
  return { store: createLocalObjectStore({ dir }), dir };
}

objectStoreContract({
  name: 'local disk',
  create: async () => (await localStore()).store,
  // /dev/null is a file: any path under it fails with ENOTDIR.
  createUnreachable: () => createLocalObjectStore({ dir: '/dev/null/objects' }),
});

describe('local disk driver', () => {
  it('an interrupted stream leaves no object and no temp file', async () => {
    const { store, dir } = await localStore();
    await store.put('keep/me', 'kept'); // Creates the temp folder.
    const { stream } = generatedStream(4 * MiB, 2 * MiB);
    await assert.rejects(store.put('half/done', stream), /source failed halfway/);
    assert.equal(await store.head('half/done'), undefined);
    assert.deepEqual(await readdir(join(dir, LOCAL_TEMP_DIR)), []);
    assert.deepEqual(
      (await collect(store.list(''))).map((o) => o.key),
      ['keep/me'],
    );
  });

  it('refuses a key that would need a file and a folder of the same name', async () => {
    const { store } = await localStore();
    await store.put('a/b', 'x');
    await assert.rejects(store.put('a', 'y'), (error: unknown) => error instanceof AppError && error.status === 409);
    await assert.rejects(
      store.put('a/b/c', 'z'),
      (error: unknown) => error instanceof AppError && error.status === 409,
    );
    assert.equal(await store.head('a'), undefined);
    await assert.rejects(store.get('a'), ObjectNotFoundError);
    await store.delete('a'); // A folder is not an object: nothing to delete.
    assert.equal(await text(await store.get('a/b')), 'x');
  });

  it('delete removes folders it leaves empty', async () => {
    const { store, dir } = await localStore();
    await store.put('x/y/z', '1');
    await store.delete('x/y/z');
    assert.deepEqual((await readdir(dir)).sort(), [LOCAL_TEMP_DIR]);
  });

  it('deleteMany removes the folders it leaves empty and keeps those still in use', async () => {
    const { store, dir } = await localStore();
    await Promise.all(['a/b/1', 'a/b/2', 'a/c/1', 'k/1', 'k/2'].map((key) => store.put(key, 'x')));
    await store.deleteMany(['a/b/1', 'a/b/2', 'a/c/1', 'k/1']);
    assert.deepEqual((await readdir(dir)).sort(), ['k', LOCAL_TEMP_DIR]);
    assert.deepEqual(await readdir(join(dir, 'k')), ['2']);
  });

  it('getBytes reads a small object within the turn of the loop, a larger one without holding the loop', async () => {
    const { store } = await localStore();
    const small = randomBytes(10 * 1024);
    const large = randomBytes(300 * 1024);
    await store.put('read/small', small);
    await store.put('read/large', large);
    /** The bytes, and whether a callback queued for the loop's next turn ran before they came. */
    const read = async (key: string) => {
      let turned = false;
      setImmediate(() => {
        turned = true;
      });
      const bytes = await store.getBytes(key, MiB);
      return { bytes, turned };
    };
    assert.deepEqual(await read('read/small'), { bytes: small, turned: false });
    assert.deepEqual(await read('read/large'), { bytes: large, turned: true });
    assert.equal(await store.getBytes('read/large', 300 * 1024 - 1), undefined);
  });

  it('a small put makes four pooled file-system calls (create, fsync, rename, folder fsync)', async () => {
    const { store } = await localStore();
    await store.put('calls/first', 'x'); // Creates the temp folder and the key's folder.
    /** The file-system requests `put` hands to libuv's thread pool (its own: those made from its async tree). */
    const pooledCalls = async (put: () => Promise<unknown>) => {
      const scope = new AsyncResource('put under test');
      const tree = new Set([scope.asyncId()]);
      let calls = 0;
      const hook = createHook({
        init(id, type, triggerId) {
          if (!tree.has(triggerId) && !tree.has(executionAsyncId())) return;
          tree.add(id);
          if (type.startsWith('FSREQ') || type.startsWith('FILEHANDLE')) calls++;
        },
      }).enable();
      try {
        await scope.runInAsyncScope(put);
      } finally {
        hook.disable();
      }
      return calls;
    };
    assert.equal(await pooledCalls(() => store.put('calls/small', randomBytes(10 * 1024))), 4);
    // Past SYNC_IO_MAX the bytes are written by the pool too, and the file closed by it.
    assert.ok((await pooledCalls(() => store.put('calls/large', randomBytes(300 * 1024)))) > 4);
    assert.equal((await store.getBytes('calls/small', MiB))?.length, 10 * 1024);
  });

  it('many concurrent puts into one folder (sharing its fsyncs) all land intact, while deletes empty it', async () => {
    const { store, dir } = await localStore();
    const keys = Array.from({ length: 200 }, (_, i) => `q/payloads/m${i}`);
    // Deletes run alongside: the folder is removed when it empties and must be made again by later puts.
    await Promise.all(
      keys.map(async (key, i) => {
        await store.put(key, Readable.from([Buffer.from(`head ${i}\r\n`), Buffer.alloc(3000 + i, 'x')]));
        if (i % 2 === 0) await store.delete(key);
      }),
    );
    const left = (await collect(store.list('q/'))).map((o) => o.key).sort();
    assert.deepEqual(left, keys.filter((_, i) => i % 2 === 1).sort());
    for (const key of left) {
      const i = Number(key.slice('q/payloads/m'.length));
      assert.equal(await text(await store.get(key)), `head ${i}\r\n${'x'.repeat(3000 + i)}`);
    }
    assert.deepEqual(await readdir(join(dir, LOCAL_TEMP_DIR)), []);
  });
});

// ---- S3 (OpenStack Swift + s3api) ----------------------------------------------------------------

describe('S3 on Swift', () => {
  let server: S3TestServer;
  before(async () => {
    server = await startS3Server();
  });
  after(async () => {
    await server?.stop();
  });

  const s3Options = () => ({
    endpoint: server.endpoint,
    region: server.region,
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    forcePathStyle: server.forcePathStyle,
  });
  const s3Store = async () => {
    // Small pages and batches: the 35-key listing takes several ListObjectsV2 pages, and the 25-key
    // deleteMany several DeleteObjects calls, without writing thousands of objects.
    const store = createS3ObjectStore({
      ...s3Options(),
      bucket: uniqueBucket('contract'),
      listPageSize: 7,
      deleteBatchSize: 10,
    });
    await store.ensureBucket();
    return store;
  };

  objectStoreContract({
    name: 's3 (Swift)',
    create: s3Store,
    createUnreachable: () =>
      createS3ObjectStore({ ...s3Options(), endpoint: 'http://127.0.0.1:1', bucket: 'unreachable' }),
  });

  describe('S3 driver', () => {
    it('createBucket makes the bucket on first write', async () => {
      const store = createS3ObjectStore({ ...s3Options(), bucket: uniqueBucket('lazy'), createBucket: true });
      try {
        await assert.rejects(store.ping(), (error: unknown) => error instanceof AppError && error.status === 503);
        await store.put('first', 'object');
        await store.ping();
        await store.ensureBucket(); // Idempotent.
        assert.equal(await text(await store.get('first')), 'object');
      } finally {
        await store.close();
      }
    });

    it('waits out a store too busy to create the bucket (503 SlowDown), but not one that refuses it', async () => {
      const proxy = await startFaultProxy(new URL(server.endpoint));
      try {
        proxy.fault = { match: isBucketCreation, answer: { status: 503, code: 'SlowDown' }, times: 3 };
        const busy = createS3ObjectStore({ ...s3Options(), endpoint: proxy.endpoint, bucket: uniqueBucket('busy') });
        await busy.ensureBucket();
        await busy.put('after/busy', 'created');
        assert.equal(await text(await busy.get('after/busy')), 'created');
        assert.equal(proxy.refused, 3);
        await busy.close();

        proxy.fault = { match: isBucketCreation, answer: { status: 403, code: 'AccessDenied' }, times: 100 };
        proxy.refused = 0;
        const denied = createS3ObjectStore({
          ...s3Options(),
          endpoint: proxy.endpoint,
          bucket: uniqueBucket('denied'),
        });
        await assert.rejects(
          denied.ensureBucket(),
          (error: unknown) => error instanceof AppError && error.status === 503,
        );
        assert.equal(proxy.refused, 1, 'a refusal is not retried');
        await denied.close();
      } finally {
        await proxy.close();
      }
    });

    describe('per-message calls (signed requests on keep-alive sockets)', () => {
      let proxy: Awaited<ReturnType<typeof startFaultProxy>>;
      let bucket: string;
      let store: S3ObjectStore;
      before(async () => {
        proxy = await startFaultProxy(new URL(server.endpoint));
        bucket = uniqueBucket('calls');
        store = createS3ObjectStore({ ...s3Options(), endpoint: proxy.endpoint, bucket, callTimeoutMs: 500 });
        await store.ensureBucket();
      });
      afterEach(() => {
        proxy.refused = 0;
        proxy.fault = { ...proxy.fault, times: 0 };
      });
      after(async () => {
        await store?.close();
        await proxy?.close();
      });
      const objectCall = (method: string) => (m: string, path: string) =>
        m === method && path.startsWith(`/${bucket}/`);

      it('a put answered 503 once is sent again and stored; two 503s fail it as unavailable', async () => {
        proxy.fault = { match: objectCall('PUT'), answer: { status: 503, code: 'SlowDown' }, times: 1 };
        await store.put('retry/once', 'stored on the second try');
        assert.equal(proxy.refused, 1);
        assert.equal(await text(await store.get('retry/once')), 'stored on the second try');

        proxy.refused = 0;
        proxy.fault = { match: objectCall('PUT'), answer: { status: 503, code: 'SlowDown' }, times: 2 };
        await assert.rejects(store.put('retry/twice', 'never'), (error: unknown) => unavailableWith(error, 'SlowDown'));
        assert.equal(proxy.refused, 2, 'two attempts in all');
        assert.equal(await store.head('retry/twice'), undefined);
      });

      it('a refusal (403) is not retried, and its S3 code reaches the error', async () => {
        proxy.fault = { match: objectCall('PUT'), answer: { status: 403, code: 'AccessDenied' }, times: 5 };
        await assert.rejects(store.put('denied', 'x'), (error: unknown) => unavailableWith(error, 'AccessDenied'));
        assert.equal(proxy.refused, 1);
      });

      it('a connection cut before the answer is tried once more, for reads and writes alike', async () => {
        await store.put('cut/read', 'read after a reset');
        proxy.fault = { match: objectCall('GET'), answer: 'reset', times: 1 };
        assert.equal(await text(await store.get('cut/read')), 'read after a reset');
        proxy.refused = 0;
        proxy.fault = { match: objectCall('PUT'), answer: 'reset', times: 1 };
        await store.put('cut/write', 'written after a reset');
        assert.equal(proxy.refused, 1);
        assert.equal(await text(await store.get('cut/write')), 'written after a reset');
      });

      it('a store that takes the request and never answers fails the call after the timeout, twice', async () => {
        proxy.fault = { match: objectCall('GET'), answer: 'stall', times: 2 };
        const started = Date.now();
        await assert.rejects(store.get('stalled'), (error: unknown) => unavailableWith(error, 'no answer within'));
        assert.equal(proxy.refused, 2);
        assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms with a 500 ms limit per attempt`);
      });

      it('a missing bucket is a store fault (503), not a missing object (404)', async () => {
        const nowhere = createS3ObjectStore({ ...s3Options(), bucket: uniqueBucket('missing') });
        try {
          await assert.rejects(nowhere.get('any'), (error: unknown) => unavailableWith(error, 'NoSuchBucket'));
        } finally {
          await nowhere.close();
        }
      });

      it("without keys, the SDK's default chain supplies the credentials (here the environment)", async () => {
        const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
        process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
        process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
        const { accessKeyId: _id, secretAccessKey: _secret, ...keyless } = s3Options();
        const fromEnvironment = createS3ObjectStore({ ...keyless, bucket });
        try {
          await fromEnvironment.put('env/credentials', 'signed with the environment');
          assert.equal(await text(await fromEnvironment.get('env/credentials')), 'signed with the environment');
        } finally {
          await fromEnvironment.close();
          for (const [name, value] of [
            ['AWS_ACCESS_KEY_ID', saved.id],
            ['AWS_SECRET_ACCESS_KEY', saved.secret],
          ] as const) {
            if (value === undefined) delete process.env[name];
            else process.env[name] = value;
          }
        }
      });

      it('keys with characters S3 encodes are stored and read back under exactly that key', async () => {
        const key = 'odd/plus+equals=at@sign_dash-dot.end';
        await store.put(key, 'encoded path');
        assert.equal(await text(await store.get(key)), 'encoded path');
        const listed: string[] = [];
        for await (const info of store.list('odd/')) listed.push(info.key);
        assert.deepEqual(listed, [key]);
        await store.delete(key);
        assert.equal(await store.head(key), undefined);
      });
    });

    it('ping fails within seconds while the server is paused and works after resume, data intact', async () => {
      const store = await s3Store();
      try {
        await store.put('survives/pause', 'still here');
        await server.pause();
        try {
          const started = Date.now();
          await assert.rejects(store.ping(), (error: unknown) => error instanceof AppError && error.status === 503);
          await assert.rejects(
            store.get('survives/pause'),
            (error: unknown) => error instanceof AppError && error.status === 503,
          );
          assert.ok(Date.now() - started < 5_000, `calls to a paused server took ${Date.now() - started} ms`);
        } finally {
          await server.resume();
        }
        await store.ping();
        assert.equal(await text(await store.get('survives/pause')), 'still here');
      } finally {
        await store.close();
      }
    });
  });
});

/**
 * Forwards every request to the S3 server unchanged (the Host header too, so signatures hold), except
 * those `fault.match` picks, which it answers with an error, cuts off or leaves unanswered (`fault.times`
 * of them, counted in `refused`).
 */
async function startFaultProxy(target: URL) {
  const state = {
    fault: {
      match: (_method: string, _path: string) => false,
      answer: { status: 503, code: 'SlowDown' } as { status: number; code: string } | 'reset' | 'stall',
      times: 0,
    },
    refused: 0,
    endpoint: '',
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((request, response) => {
    const { fault } = state;
    if (fault.match(request.method ?? '', request.url ?? '') && state.refused < fault.times) {
      state.refused++;
      request.resume();
      if (fault.answer === 'reset') return void request.socket.destroy();
      if (fault.answer === 'stall') return;
      response.writeHead(fault.answer.status, { 'content-type': 'application/xml' });
      response.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${fault.answer.code}</Code><Message>no</Message></Error>`,
      );
      return;
    }
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

/** PUT /bucket: a bucket's creation. */
const isBucketCreation = (method: string, path: string) => method === 'PUT' && /^\/[^/?]+\/?(\?.*)?$/.test(path);
