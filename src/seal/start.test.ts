import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../test/support/ports.ts';
import { createTestDatabase } from '../../test/support/postgres.ts';
import { postSeal, rawMessage, startStandIn, type StandIn } from '../../test/support/seal.ts';
import { SEALPOST_BIN, startSealpostProcess } from '../../test/support/sealpost-process.ts';

const run = promisify(execFile);

describe('sealpost start seal', () => {
  let database: { url: string; drop(): Promise<void> };
  let dataDir: string;
  let standIn: StandIn;

  before(async () => {
    database = await createTestDatabase('sealcli');
    dataDir = await mkdtemp(join(tmpdir(), 'sealpost-seal-cli-'));
    standIn = await startStandIn();
  });
  after(async () => {
    await standIn?.close();
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Only what the test gives: nothing from this machine's environment leaks into the child. */
  const baseEnv = async () => ({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    LOG_LEVEL: 'warn',
    DATABASE_URL: database.url,
    SEALPOST_DATA_DIR: dataDir,
    SEAL_PORT: String(await freePort()),
  });

  /** For startSealpostProcess, which picks the ports: the base, the stand-in as the cluster, and `extra`. */
  const processEnv = async (extra: Record<string, string> = {}) => {
    const { SEAL_PORT: _ownPort, ...inherited } = await baseEnv();
    return {
      ...inherited,
      IPFS_CLUSTER_HOST: '127.0.0.1',
      IPFS_CLUSTER_PORT: String(standIn.port),
      IPFS_CLUSTER_SECURE: 'false',
      IPFS_PROXY_PORT: String(standIn.proxyPort),
      ...extra,
    };
  };

  it('refuses to start without a cluster configuration, exits non-zero and says how to provide one', async () => {
    await assert.rejects(
      run(process.execPath, [SEALPOST_BIN, 'start', 'seal'], { env: await baseEnv(), timeout: 60_000 }),
      (error: any) => {
        assert.equal(error.code, 1);
        const noConfiguration =
          'No IPFS cluster configuration: nothing was stored through POST /v1/ipfs/config ' +
          'and IPFS_CLUSTER_HOST is not set';
        assert.ok(error.stderr.includes(noConfiguration), error.stderr);
        const howTo =
          'Set IPFS_CLUSTER_HOST (and IPFS_CLUSTER_PORT, IPFS_CLUSTER_SECURE, ' +
          'IPFS_CLUSTER_USER/IPFS_CLUSTER_PASS as needed)';
        assert.ok(error.stderr.includes(howTo), error.stderr);
        assert.doesNotMatch(error.stdout + error.stderr, /Sealpost is running/);
        return true;
      },
    );
  });

  it('refuses to start in production without SEAL_MASTER_KEY', async () => {
    const env = {
      ...(await baseEnv()),
      NODE_ENV: 'production',
      AUTH_PUBLIC_URL: 'https://read.example',
      ADMIN_TOKEN: 'an-admin-token-32-characters-long',
      SERVICE_TOKEN: 'a-service-token-32-characters-long',
      IPFS_CLUSTER_HOST: '127.0.0.1',
      IPFS_CLUSTER_PORT: String(standIn.port),
      IPFS_CLUSTER_SECURE: 'false',
    };
    await assert.rejects(
      run(process.execPath, [SEALPOST_BIN, 'start', 'seal'], { env, timeout: 60_000 }),
      (error: any) => {
        assert.equal(error.code, 1);
        assert.match(error.stderr, /SEAL_MASTER_KEY is not set: production needs .*openssl rand -hex 32/);
        return true;
      },
    );
  });

  it('writes a master key to the data folder once (0600) and reuses it: a restart reads what was sealed', async () => {
    const env = await processEnv({ SERVICE_TOKEN: 'cli-service-token' });
    const first = await startSealpostProcess(env, { which: 'seal' });
    let id: string;
    try {
      const response = await postSeal({ url: first.urls.seal, serviceToken: 'cli-service-token' }, rawMessage());
      assert.equal(response.status, 201);
      id = (await response.json()).id;
    } finally {
      assert.equal(await first.stop(), 0);
    }
    const keyFile = join(dataDir, 'seal-master.key');
    const key = await readFile(keyFile, 'utf8');
    assert.match(key, /^[0-9a-f]{64}\n$/);
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);

    const second = await startSealpostProcess(env, { which: 'seal' });
    try {
      const content = await fetch(`${second.urls.seal}/v1/sealed/${id}/content`, {
        headers: { authorization: 'Bearer cli-service-token' },
      });
      assert.equal(content.status, 200);
      assert.match(await content.text(), /Subject: Quarterly report/);
      assert.equal((await fetch(`${second.urls.seal}/readyz`)).status, 200);
    } finally {
      assert.equal(await second.stop(), 0);
    }
    assert.equal(await readFile(keyFile, 'utf8'), key, 'the same key');
  });

  it('opens no object store: ready, and sealing, with S3 configured but unreachable', async () => {
    const env = await processEnv({
      SERVICE_TOKEN: 'cli-service-token',
      // The other services' store, shared configuration: nothing listens there.
      S3_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      S3_BUCKET: 'payloads',
      S3_ACCESS_KEY_ID: 'key',
      S3_SECRET_ACCESS_KEY: 'secret',
    });
    const seal = await startSealpostProcess(env, { which: 'seal' });
    try {
      const ready = await fetch(`${seal.urls.seal}/readyz`);
      assert.equal(ready.status, 200, await ready.clone().text());
      assert.deepEqual(Object.keys((await ready.json()).checks).sort(), ['database', 'ipfsCluster']);
      const response = await postSeal({ url: seal.urls.seal, serviceToken: 'cli-service-token' }, rawMessage());
      assert.equal(response.status, 201);
    } finally {
      assert.equal(await seal.stop(), 0);
    }
  });

  it("fixes V8's heap growing factor of its process at 2, and keeps the one node was given", async () => {
    const env = await processEnv({ LOG_LEVEL: 'info' });
    const growth = (stdout: string) => {
      const line = stdout.split('\n').find((l) => l.includes('"heapGrowingPercent"'));
      assert.ok(line, stdout);
      const { heapGrowingPercent, msg } = JSON.parse(line) as { heapGrowingPercent: number; msg: string };
      return { heapGrowingPercent, msg };
    };
    const own = await startSealpostProcess(env, { which: 'seal' });
    try {
      assert.deepEqual(growth(own.stdout()), {
        heapGrowingPercent: 100,
        msg: 'V8 heap growing factor fixed for this service',
      });
    } finally {
      assert.equal(await own.stop(), 0);
    }
    const given = await startSealpostProcess(env, { which: 'seal', nodeArgs: ['--heap-growing-percent=50'] });
    try {
      assert.deepEqual(growth(given.stdout()), {
        heapGrowingPercent: 50,
        msg: 'V8 heap growing factor as given to node',
      });
    } finally {
      assert.equal(await given.stop(), 0);
    }
  });
});
