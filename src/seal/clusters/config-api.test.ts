import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { loadConfig } from '../../cli/config.ts';
import { openDatabase } from '../../kernel/db/index.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import {
  postSeal,
  rawMessage,
  standInEnv,
  startStandIn,
  TEST_MASTER_KEY,
  type StandIn,
} from '../../../test/support/seal.ts';
import { sealService } from '../service.ts';

const post = (service: ServiceUnderTest, body: unknown, token = service.adminToken) =>
  fetch(`${service.url}/v1/ipfs/config`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const getConfig = async (service: ServiceUnderTest) =>
  (await fetch(`${service.url}/v1/ipfs/config`, { headers: { authorization: `Bearer ${service.adminToken}` } })).json();

describe('POST /v1/ipfs/config validation', () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  before(async () => {
    standIn = await startStandIn();
    seal = await startServiceForTest(sealService, {
      env: { SEAL_MASTER_KEY: TEST_MASTER_KEY, ...standInEnv(standIn) },
    });
  });
  after(async () => {
    await seal?.stop();
    await standIn?.close();
  });

  const ok = { host: 'cluster-1.example' };
  const cases: Array<[string, unknown, RegExp]> = [
    ['no body fields', {}, /^clusters is required$/],
    ['an unknown top-level field', { clusters: [ok], primary: 0 }, /^primary is not a known field$/],
    ['clusters not an array', { clusters: ok }, /^clusters must be array$/],
    ['no cluster', { clusters: [] }, /^clusters must NOT have fewer than 1 items$/],
    ['a cluster without host', { clusters: [ok, { port: '9094' }] }, /^clusters\[1\]\.host is required$/],
    ['a host that is not a string', { clusters: [{ host: 12 }] }, /^clusters\[0\]\.host must be string$/],
    ['an empty host', { clusters: [{ host: '' }] }, /^clusters\[0\]\.host must NOT have fewer than 1 characters$/],
    [
      'a host with a scheme',
      { clusters: [ok, { host: 'https://cluster.example' }] },
      /^clusters\[1\]\.host "https:\/\/cluster\.example" is not a host name or IP address/,
    ],
    [
      'a host with a path',
      { clusters: [{ host: 'cluster.example/api' }] },
      /^clusters\[0\]\.host .* without scheme, port or path/,
    ],
    ['a host with a port', { clusters: [{ host: 'cluster.example:9094' }] }, /^clusters\[0\]\.host /],
    ['a host with a space', { clusters: [{ host: 'cluster example' }] }, /^clusters\[0\]\.host /],
    ['a dotted number that is no IP', { clusters: [{ host: '300.1.2.3' }] }, /^clusters\[0\]\.host /],
    [
      'port 0',
      { clusters: [ok, { host: 'b.example', port: '0' }] },
      /^clusters\[1\]\.port "0" is not a port number from 1 to 65535$/,
    ],
    ['port 65536', { clusters: [{ ...ok, port: '65536' }] }, /^clusters\[0\]\.port "65536" is not a port/],
    ['a port that is no number', { clusters: [{ ...ok, port: 'http' }] }, /^clusters\[0\]\.port "http" is not a port/],
    ['a port as a big JSON number', { clusters: [{ ...ok, port: 70000 }] }, /^clusters\[0\]\.port 70000 is not a port/],
    [
      'a port as a boolean',
      { clusters: [{ ...ok, port: true }] },
      /^clusters\[0\]\.port true is not a port number from 1 to 65535$/,
    ],
    [
      'user without pass',
      { clusters: [{ ...ok, user: 'u' }] },
      /^clusters\[0\]\.pass is required when clusters\[0\]\.user is given/,
    ],
    [
      'pass without user',
      { clusters: [ok, { host: 'b.example', pass: 'p' }] },
      /^clusters\[1\]\.user is required when clusters\[1\]\.pass is given/,
    ],
    [
      'an empty user',
      { clusters: [{ ...ok, user: '', pass: 'p' }] },
      /^clusters\[0\]\.user must NOT have fewer than 1 characters$/,
    ],
    ['secure as a string', { clusters: [{ ...ok, secure: 'true' }] }, /^clusters\[0\]\.secure must be boolean$/],
    [
      'a timeout that is no duration',
      { clusters: [ok, { host: 'b.example', timeout: '5 minutes' }] },
      /^clusters\[1\]\.timeout "5 minutes" is not a duration string above zero/,
    ],
    [
      'a timeout without unit',
      { clusters: [{ ...ok, timeout: '30' }] },
      /^clusters\[0\]\.timeout "30" is not a duration/,
    ],
    ['a zero timeout', { clusters: [{ ...ok, timeout: '0s' }] }, /^clusters\[0\]\.timeout "0s" /],
    ['a negative timeout', { clusters: [{ ...ok, timeout: '-1s' }] }, /^clusters\[0\]\.timeout "-1s" /],
    ['a timeout as a number', { clusters: [{ ...ok, timeout: 30 }] }, /^clusters\[0\]\.timeout must be string$/],
    [
      'an unknown cluster field',
      { clusters: [{ ...ok, timout: '1s' }] },
      /^clusters\[0\]\.timout is not a known field$/,
    ],
    [
      'addParams not an object',
      { clusters: [{ ...ok, addParams: true }] },
      /^clusters\[0\]\.addParams must be object$/,
    ],
    ...(['local', 'recursive', 'hidden', 'wrap', 'shard', 'streamChannels', 'noPin'] as const).map(
      (field): [string, unknown, RegExp] => [
        `addParams.${field} as a string`,
        { clusters: [ok, { host: 'b.example', addParams: { [field]: 'yes' } }] },
        new RegExp(`^clusters\\[1\\]\\.addParams\\.${field} must be boolean$`),
      ],
    ),
    [
      'an unknown addParams field',
      { clusters: [{ ...ok, addParams: { 'wrap-with-directory': true } }] },
      /^clusters\[0\]\.addParams\.wrap-with-directory is not a known field$/,
    ],
    ['pinParams not an object', { clusters: [{ ...ok, pinParams: [] }] }, /^clusters\[0\]\.pinParams must be object$/],
    [
      'replicationFactorMin not an integer',
      { clusters: [{ ...ok, pinParams: { replicationFactorMin: 1.5 } }] },
      /^clusters\[0\]\.pinParams\.replicationFactorMin must be integer$/,
    ],
    [
      'replicationFactorMin as a string',
      { clusters: [{ ...ok, pinParams: { replicationFactorMin: '2' } }] },
      /^clusters\[0\]\.pinParams\.replicationFactorMin must be integer$/,
    ],
    [
      'replicationFactorMax below -1',
      { clusters: [ok, { host: 'b.example', pinParams: { replicationFactorMax: -2 } }] },
      /^clusters\[1\]\.pinParams\.replicationFactorMax must be >= -1$/,
    ],
    [
      'replicationFactorMin above max',
      { clusters: [{ ...ok, pinParams: { replicationFactorMin: 3, replicationFactorMax: 2 } }] },
      /^clusters\[0\]\.pinParams\.replicationFactorMin 3 is larger than replicationFactorMax 2$/,
    ],
    [
      'a pin name that is not a string',
      { clusters: [{ ...ok, pinParams: { name: 7 } }] },
      /^clusters\[0\]\.pinParams\.name must be string$/,
    ],
    [
      'expireIn as a number',
      { clusters: [{ ...ok, pinParams: { expireIn: 3600 } }] },
      /^clusters\[0\]\.pinParams\.expireIn must be string$/,
    ],
    [
      'an unknown pinParams field',
      { clusters: [{ ...ok, pinParams: { replication: 2 } }] },
      /^clusters\[0\]\.pinParams\.replication is not a known field$/,
    ],
    [
      'the same cluster twice',
      { clusters: [ok, { host: 'cluster-1.example', port: '9094' }] },
      /^clusters\[1\] repeats clusters\[0\] \(cluster-1\.example:9094\)/,
    ],
    // What the real cluster refuses on every pin (cluster.go isReplicationFactorValid): 0 or unset is its default, -1.
    [
      'replicationFactorMin alone',
      { clusters: [{ ...ok, pinParams: { replicationFactorMin: 2 } }] },
      new RegExp(
        /^clusters\[0\]\.pinParams\.replicationFactorMin 2 and replicationFactorMax unset /.source +
          /\(the cluster default, -1\): the cluster refuses a pair where exactly one side is -1/.source,
      ),
    ],
    [
      'min -1 with max 3',
      { clusters: [{ ...ok, pinParams: { replicationFactorMin: -1, replicationFactorMax: 3 } }] },
      /^clusters\[0\]\.pinParams\.replicationFactorMin -1 and replicationFactorMax 3: the cluster refuses/,
    ],
    [
      'min 3 with max -1',
      { clusters: [{ ...ok, pinParams: { replicationFactorMin: 3, replicationFactorMax: -1 } }] },
      /^clusters\[0\]\.pinParams\.replicationFactorMin 3 and replicationFactorMax -1: the cluster refuses/,
    ],
    [
      'min 0 with max 2',
      { clusters: [{ ...ok, pinParams: { replicationFactorMin: 0, replicationFactorMax: 2 } }] },
      /replicationFactorMin 0 \(the cluster default, -1\) and replicationFactorMax 2/,
    ],
    [
      'a user with a colon',
      { clusters: [{ ...ok, user: 'team:sealer', pass: 'p' }] },
      /^clusters\[0\]\.user contains ':'/,
    ],
    [
      'shard true',
      { clusters: [{ ...ok, addParams: { shard: true } }] },
      /^clusters\[0\]\.addParams\.shard true is not supported/,
    ],
    [
      "a pin name too long for the REST API's header limit once URL-encoded",
      { clusters: [{ ...ok, pinParams: { name: 'ü'.repeat(400) } }] },
      /^clusters\[0\]\.pinParams\.name takes 2400 bytes URL-encoded; at most 2048 fit/,
    ],
    // Settings as the real cluster would take them: a time limit it can work with, no control characters.
    [
      'a timeout of one nanosecond',
      { clusters: [{ ...ok, timeout: '1ns' }] },
      /^clusters\[0\]\.timeout "1ns" is below 100ms; a time limit for a cluster is taken from 100ms to 10m$/,
    ],
    ['a timeout of 99ms', { clusters: [{ ...ok, timeout: '99ms' }] }, /^clusters\[0\]\.timeout "99ms" is below 100ms/],
    [
      'a timeout Go would barely hold',
      { clusters: [ok, { host: 'b.example', timeout: '2562047h' }] },
      /^clusters\[1\]\.timeout "2562047h" is above 10m; a time limit for a cluster is taken from 100ms to 10m$/,
    ],
    ['a timeout of 10m1s', { clusters: [{ ...ok, timeout: '10m1s' }] }, /^clusters\[0\]\.timeout "10m1s" is above 10m/],
    [
      'a user with CR LF',
      { clusters: [{ ...ok, user: 'sealer\r\nX-Injected: 1', pass: 'p' }] },
      /^clusters\[0\]\.user contains the control character U\+000D; no setting takes control characters/,
    ],
    [
      'a pin name with LF',
      { clusters: [ok, { host: 'b.example', pinParams: { name: 'sealed\nmail' } }] },
      /^clusters\[1\]\.pinParams\.name contains the control character U\+000A; /,
    ],
    [
      'a password with NUL (the kernel refuses NUL in any body)',
      { clusters: [{ ...ok, user: 'u', pass: 'se\u0000cret' }] },
      /^clusters\[0\]\.pass contains a NUL character/,
    ],
    [
      'a password with DEL, not echoed',
      { clusters: [{ ...ok, user: 'u', pass: 'se\u007fcret' }] },
      new RegExp(
        /^clusters\[0\]\.pass contains the control character U\+007F; /.source +
          /no setting takes control characters \(CR, LF, NUL, tab or any other C0 or C1 control\)$/.source,
      ),
    ],
    [
      'an expireIn with a C1 control',
      { clusters: [{ ...ok, pinParams: { expireIn: '1h\u0085' } }] },
      /^clusters\[0\]\.pinParams\.expireIn contains the control character U\+0085; /,
    ],
    [
      'a host with a tab',
      { clusters: [{ host: 'cluster\t.example' }] },
      /^clusters\[0\]\.host contains the control character U\+0009; /,
    ],
    [
      'an ipfsApi without scheme',
      { clusters: [{ ...ok, ipfsApi: '10.0.0.5:9095' }] },
      /^clusters\[0\]\.ipfsApi "10\.0\.0\.5:9095" is not a URL \(give it as http:\/\/host:port/,
    ],
    [
      'an ipfsApi with another scheme',
      { clusters: [{ ...ok, ipfsApi: 'ftp://10.0.0.5:9095' }] },
      /^clusters\[0\]\.ipfsApi "ftp:\/\/10\.0\.0\.5:9095" is not an http or https URL/,
    ],
    [
      'an ipfsApi with a path',
      { clusters: [{ ...ok, ipfsApi: 'http://10.0.0.5:9095/api/v0' }] },
      /^clusters\[0\]\.ipfsApi "http:\/\/10\.0\.0\.5:9095\/api\/v0" has a path, query or fragment/,
    ],
    [
      'an ipfsApi with credentials',
      { clusters: [{ ...ok, ipfsApi: 'http://u:p@10.0.0.5:9095' }] },
      /^clusters\[0\]\.ipfsApi .* carries credentials, which belong in user and pass/,
    ],
    [
      'an ipfsApi not a URL',
      { clusters: [{ ...ok, ipfsApi: 'nowhere' }] },
      /^clusters\[0\]\.ipfsApi "nowhere" is not a URL/,
    ],
  ];

  for (const [name, body, message] of cases) {
    it(`refuses ${name} with a 400 naming the field`, async () => {
      const response = await post(seal, body);
      assert.equal(response.status, 400);
      const error = await response.json();
      assert.equal(error.kind, 400);
      assert.equal(error.errorCode, 'validation_failed');
      assert.match(error.message, message);
    });
  }

  it('refuses a body that is not JSON', async () => {
    const response = await post(seal, '{"clusters": [');
    assert.equal(response.status, 400);
    assert.equal((await response.json()).kind, 400);
  });

  it('stored nothing for any refused configuration', async () => {
    const rows = await sql<{ n: number }>`select count(*)::int as n from seal.cluster_configs`.execute(
      seal.database.db,
    );
    assert.equal(rows.rows[0]!.n, 0);
    assert.equal((await getConfig(seal)).stored, null);
  });

  it('accepts host names, IPv4 and IPv6, ports as strings or numbers, an expireIn not a duration', async () => {
    const response = await post(seal, {
      clusters: [
        { host: 'ipfs_cluster' },
        { host: '10.0.0.7', port: 9097 },
        { host: '[2001:db8::1]', port: '09094', pinParams: { expireIn: 'never' } },
        { host: 'cluster.example.', timeout: '100ms', ipfsApi: 'http://[2001:db8::2]:5001/' },
        { host: 'cluster-5.example', timeout: '10m', ipfsApi: 'https://ipfs-5.example:8443' },
      ],
    });
    assert.equal(response.status, 201, await response.clone().text());
    const body = await response.json();
    assert.deepEqual(
      body.clusters.map((cluster: { host: string; port: string }) => `${cluster.host} ${cluster.port}`),
      ['ipfs_cluster 9094', '10.0.0.7 9097', '2001:db8::1 9094', 'cluster.example. 9094', 'cluster-5.example 9094'],
    );
    assert.deepEqual(body.clusters[2].pinParams, { expireIn: 'never' });
    assert.deepEqual(
      body.clusters.map((cluster: { ipfsApi?: string }) => cluster.ipfsApi),
      [undefined, undefined, undefined, 'http://[2001:db8::2]:5001', 'https://ipfs-5.example:8443'],
      'the IPFS API address stored as scheme, host and port',
    );
  });

  it('needs the admin token', async () => {
    assert.equal((await post(seal, { clusters: [ok] }, seal.serviceToken)).status, 401);
    assert.equal((await fetch(`${seal.url}/v1/ipfs/config`)).status, 401);
  });
});

describe('cluster configuration: storage, redaction, environment fallback, restart', () => {
  let primary: StandIn;
  let guarded: StandIn;
  let database: { url: string; drop(): Promise<void> };
  let seal: ServiceUnderTest | undefined;
  const start = async (env: Record<string, string> = {}) =>
    (seal = await startServiceForTest(sealService, {
      databaseUrl: database.url,
      env: { SEAL_MASTER_KEY: TEST_MASTER_KEY, ...env },
    }));

  before(async () => {
    primary = await startStandIn();
    guarded = await startStandIn({ user: 'cluster-user', pass: 'pa55-w0rd!' });
    database = await createTestDatabase('seal');
  });
  after(async () => {
    await seal?.stop();
    await database?.drop();
    await primary?.close();
    await guarded?.close();
  });

  const guardedConfig = () => ({
    clusters: [
      {
        host: '127.0.0.1',
        port: String(guarded.port),
        user: 'cluster-user',
        pass: 'pa55-w0rd!',
        secure: false,
        timeout: '5s',
        addParams: { noPin: false },
        pinParams: { replicationFactorMin: -1, replicationFactorMax: -1, name: 'sealed' },
      },
      { host: 'ipfs-2.example' },
    ],
  });

  it("runs on the IPFS_CLUSTER_* variables when nothing is stored, with the spec's defaults for the rest", async () => {
    const service = await start({
      ...standInEnv(primary),
      IPFS_CLUSTER_USER: 'env-user',
      IPFS_CLUSTER_PASS: 'env-secret',
    });
    assert.deepEqual(await getConfig(service), {
      inForce: {
        source: 'environment',
        clusters: [
          {
            host: '127.0.0.1',
            port: String(primary.port),
            user: 'env-user',
            pass: '[redacted]',
            secure: false,
            timeout: '30s',
          },
        ],
      },
      stored: null,
      restartRequired: false,
    });
    await service.stop();
    seal = undefined;
  });

  it('stores a configuration, defaults applied, password encrypted; answers redacted with a restart note', async () => {
    const service = await start(standInEnv(primary));
    const response = await post(service, guardedConfig());
    assert.equal(response.status, 201);
    const body = await response.json();
    assert.deepEqual(body.clusters, [
      { ...guardedConfig().clusters[0], pass: '[redacted]' },
      { host: 'ipfs-2.example', port: '9094', secure: true, timeout: '30s' },
    ]);
    assert.equal(body.restartRequired, true);
    assert.match(body.message, /Restart every instance/);
    assert.ok(!Number.isNaN(Date.parse(body.storedAt)));

    const rows = await sql<{ clusters: unknown }>`select clusters from seal.cluster_configs`.execute(
      service.database.db,
    );
    const stored = JSON.stringify(rows.rows);
    assert.ok(!stored.includes('pa55-w0rd!'), 'no password in the database');
    assert.match(stored, /"passEncrypted":"k1\.[A-Za-z0-9_-]+"/);
    assert.ok(!JSON.stringify(service.logs).includes('pa55-w0rd!'), 'nor in the logs');
  });

  it('keeps the configuration read at start in force until a restart, and says a restart is pending', async () => {
    const service = seal!;
    const state = await getConfig(service);
    assert.equal(state.inForce.source, 'environment');
    assert.equal(state.inForce.clusters[0].port, String(primary.port));
    assert.equal(state.stored.clusters[0].pass, '[redacted]');
    assert.equal(state.restartRequired, true);
    const sealed = await postSeal(service, rawMessage());
    assert.equal(sealed.status, 201);
    assert.equal(
      primary.requests.filter((r) => r.path === '/add').length,
      1,
      'still sealed through the environment cluster',
    );
    assert.equal(guarded.requests.length, 0);
    await service.stop();
    seal = undefined;
  });

  it('after a restart runs on the stored configuration (not the environment) with the decrypted password', async () => {
    const service = await start(standInEnv(primary));
    const state = await getConfig(service);
    assert.equal(state.inForce.source, 'stored');
    assert.deepEqual(state.inForce.clusters, state.stored.clusters);
    assert.equal(state.restartRequired, false);

    const response = await postSeal(service, rawMessage());
    assert.equal(response.status, 201);
    const { id, pins } = await response.json();
    assert.deepEqual(pins[0], { cluster: `127.0.0.1:${guarded.port}`, status: 'pinned' });
    assert.equal(pins[1].status, 'pin_error', 'ipfs-2.example cannot be reached from here');
    const calls = guarded.requests.filter((r) => r.listener === 'rest' && r.path !== '/id');
    assert.deepEqual(
      calls.map((r) => `${r.method} ${r.path.replace(/Qm\w+/, '{cid}')}?${r.query}`),
      [
        `POST /add?no-pin=false&replication-min=-1&replication-max=-1&name=sealed%3A${id}`,
        `POST /pins/{cid}?replication-min=-1&replication-max=-1&name=sealed%3A${id}`,
        'GET /pins/{cid}?',
      ],
    );
    assert.ok(calls.every((r) => r.authorization));
    assert.equal(
      primary.requests.filter((r) => r.path === '/add').length,
      1,
      'the environment cluster is not used any more',
    );

    const same = await post(service, guardedConfig());
    assert.equal((await same.json()).restartRequired, false, 'storing what is in force needs no restart');
  });

  it('refuses to start with another SEAL_MASTER_KEY than the one that wrapped its stored password', async () => {
    await seal?.stop();
    seal = undefined;
    const config = loadConfig({
      DATABASE_URL: database.url,
      SEAL_MASTER_KEY: 'bb'.repeat(32),
      SEAL_PORT: '0',
      LOG_LEVEL: 'silent',
    });
    const db = await openDatabase({ url: database.url, poolSize: 1 });
    try {
      const context = {
        config,
        settings: config.seal,
        database: db,
        objects: undefined as never,
        logger: createLogger({ level: 'silent' }),
      };
      await assert.rejects(
        sealService.start(context),
        /^Error: SEAL_MASTER_KEY: key version 1 is not the key that version 1 wrapped with before/,
      );
    } finally {
      await db.close();
    }
  });
});
