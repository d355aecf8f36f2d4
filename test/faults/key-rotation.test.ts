import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { singleKeyring } from '../../src/seal/crypto/environment-key.ts';
import { messageKeyLabel, SecretError } from '../../src/seal/crypto/secret-box.ts';
import { createTestDatabase } from '../support/postgres.ts';
import { postSeal, rawMessage, standInCluster, standInEnv, startStandIn, type StandIn } from '../support/seal.ts';
import { SEALPOST_BIN, startSealpostProcess, type SealpostProcess } from '../support/sealpost-process.ts';
import { startSoftHsm, type SoftHsm } from '../support/softhsm.ts';

/**
 * Rotating the master key on the real stack: messages sealed under version 1, a rotation to version 2
 * while mail keeps being sealed and read, a kill -9 in the middle of the re-wrap and a restart, then version 1
 * removed. Once with version 2 in SEAL_MASTER_KEYS, once with it in a SoftHSM2 token (a rotation from an
 * environment key to an HSM key). The seal service runs as `sealpost start seal`, a real process.
 */
const run = promisify(execFile);
const KEY_1 = '11'.repeat(32);
const KEY_2 = '22'.repeat(32);
const ADMIN = 'keys-admin-token';
const SERVICE = 'keys-service-token';
/** Sealed under version 1, two of them withdrawn (no key left to re-wrap). */
const OLD_MESSAGES = 40;
const WITHDRAWN = 2;
/** Slow enough that a kill -9 lands in the middle of the re-wrap, on a busy machine too (38 keys at 4/s: 9.5 s). */
const RATE = '4';

interface Stack {
  standIn: StandIn;
  database: { url: string; drop(): Promise<void> };
  dataDir: string;
  pool: pg.Pool;
}

async function startStack(name: string): Promise<Stack> {
  const [standIn, database, dataDir] = await Promise.all([
    startStandIn({ user: 'cluster-user', pass: 'cluster-pass' }),
    createTestDatabase(name),
    mkdtemp(join(tmpdir(), 'sealpost-keys-')),
  ]);
  return { standIn, database, dataDir, pool: new pg.Pool({ connectionString: database.url, max: 2 }) };
}

async function stopStack(stack: Stack | undefined) {
  await stopAll();
  if (!stack) return;
  await stack.pool.end();
  await stack.standIn.close();
  await stack.database.drop();
  await rm(stack.dataDir, { recursive: true, force: true });
}

/** Every process started, so that a failed test leaves none running. */
const started = new Set<SealpostProcess>();

async function startSeal(stack: Stack, keys: Record<string, string>): Promise<SealpostProcess> {
  const process = await startSealpostProcess(
    {
      LOG_LEVEL: 'warn',
      DATABASE_URL: stack.database.url,
      SEALPOST_DATA_DIR: stack.dataDir,
      ADMIN_TOKEN: ADMIN,
      SERVICE_TOKEN: SERVICE,
      ...standInEnv(stack.standIn),
      IPFS_CLUSTER_USER: 'cluster-user',
      IPFS_CLUSTER_PASS: 'cluster-pass',
      SEAL_KEY_REWRAP_RATE: RATE,
      ...keys,
    },
    { which: 'seal' },
  );
  started.add(process);
  return process;
}

async function stopAll() {
  for (const process of started) await process.stop('SIGKILL');
  started.clear();
}

/** A start that must be refused: resolves with what the process said on its way out. */
async function refusedStart(stack: Stack, keys: Record<string, string>): Promise<string> {
  try {
    const running = await startSeal(stack, keys);
    await running.stop('SIGKILL');
  } catch (error) {
    return (error as Error).message;
  }
  assert.fail('the seal service started');
}

const admin = (process: SealpostProcess, path: string, method = 'GET') =>
  fetch(`${process.urls.seal}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` } });

/** `sealpost keys ACTION` as an operator runs it, against this seal service. */
async function sealpostKeys(process: SealpostProcess, action: 'status' | 'rotate'): Promise<string> {
  const { stdout } = await run(globalThis.process.execPath, [SEALPOST_BIN, 'keys', action], {
    env: {
      PATH: globalThis.process.env.PATH ?? '',
      SEAL_URL: process.urls.seal,
      ADMIN_TOKEN: ADMIN,
      LOG_LEVEL: 'warn',
    },
  });
  return stdout;
}

interface KeyStatus {
  current: number;
  versions: Array<{
    version: number;
    source: string | null;
    messages: number;
    clusterPasswords: number;
    removable: boolean;
  }>;
  rotation: { version: number; state: string; rewrapped: number } | null;
}
const keyStatus = async (process: SealpostProcess): Promise<KeyStatus> =>
  (await admin(process, '/v1/admin/keys')).json();

async function seal(process: SealpostProcess, body: string): Promise<string> {
  const response = await postSeal({ url: process.urls.seal, serviceToken: SERVICE }, rawMessage({ body }));
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as { id: string }).id;
}

async function read(process: SealpostProcess, id: string): Promise<Response> {
  return fetch(`${process.urls.seal}/v1/sealed/${id}/content`, { headers: { authorization: `Bearer ${SERVICE}` } });
}

async function assertReads(process: SealpostProcess, id: string, body: string) {
  const response = await read(process, id);
  assert.equal(response.status, 200, `${id}: ${await response.clone().text()}`);
  assert.ok((await response.text()).endsWith(body), `${id} reads as sealed`);
}

async function metric(process: SealpostProcess, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${process.metricsUrl}/metrics`)).text();
  const match = pattern.exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`not in time: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Per key version, the running message keys in the database, from the column and from each value's own prefix. */
async function versionsInDatabase(pool: pg.Pool) {
  const { rows } = await pool.query<{ key_version: number; prefix: string; count: string }>(
    `select key_version, split_part(wrapped_key, '.', 1) as prefix, count(*) from seal.sealed_messages
      where wrapped_key is not null group by 1, 2 order by 1, 2`,
  );
  return rows.map((row) => ({ version: row.key_version, prefix: row.prefix, count: Number(row.count) }));
}

/**
 * The whole rotation, for a version 2 given by `v2` (SEAL_MASTER_KEYS, or a token's SEAL_KEY_PKCS11_*): version 1 is
 * always SEAL_MASTER_KEY, as a deployment from before key versions has it.
 */
/** Where versions 1 and 2 are configured: alone, together during the rotation, and each one's source and variable. */
interface Versions {
  v1: Record<string, string>;
  both: Record<string, string>;
  v2: Record<string, string>;
  v1Source: string;
  v1Variable: string;
  v2Source: string;
}

async function rotateUnderLoad(stack: Stack, { v1, both, v2, v1Source, v1Variable, v2Source }: Versions) {
  const bodies = new Map<string, string>();

  // Version 1 alone, as before key versions: messages, two withdrawn, and a stored cluster password.
  let process = await startSeal(stack, v1);
  for (let i = 0; i < OLD_MESSAGES; i++)
    bodies.set(await seal(process, `old message ${i}\r\n`), `old message ${i}\r\n`);
  const withdrawn = [...bodies.keys()].slice(0, WITHDRAWN);
  for (const id of withdrawn) {
    const response = await fetch(`${process.urls.seal}/v1/admin/sealed/${id}/withdraw`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'sent to the wrong people' }),
    });
    assert.equal(response.status, 200, await response.text());
    bodies.delete(id);
  }
  const stored = await fetch(`${process.urls.seal}/v1/ipfs/config`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      clusters: [standInCluster(stack.standIn, { user: 'cluster-user', pass: 'cluster-pass' })],
    }),
  });
  assert.equal(stored.status, 201, await stored.text());
  assert.equal(await process.stop(), 0);
  const running = OLD_MESSAGES - WITHDRAWN;
  assert.deepEqual(await versionsInDatabase(stack.pool), [{ version: 1, prefix: 'k1', count: running }]);

  // Version 2 added: it wraps what is sealed from now on; the rotation re-wraps the rest while mail goes on.
  process = await startSeal(stack, both);
  let status = await keyStatus(process);
  assert.equal(status.current, 2);
  assert.deepEqual(
    status.versions.map(({ version, source, messages, clusterPasswords, removable }) => ({
      version,
      source,
      messages,
      clusterPasswords,
      removable,
    })),
    [
      { version: 1, source: v1Source, messages: running, clusterPasswords: 1, removable: false },
      { version: 2, source: v2Source, messages: 0, clusterPasswords: 0, removable: false },
    ],
  );
  const rotate = await sealpostKeys(process, 'rotate');
  assert.match(rotate, /^rotation to version 2 asked for/);
  assert.match(rotate, new RegExp(`\\n1 +${v1Source} +\\d+ +1 +still wraps \\d+: keep it in ${v1Variable}`));
  let sealedDuring = 0;
  const oldIds = [...bodies.keys()];
  await eventually('a few message keys re-wrapped', async () => {
    // Mail goes on: a new message sealed (under version 2) and an old one read, between two looks at the metrics.
    const body = `new message ${sealedDuring++}\r\n`;
    bodies.set(await seal(process, body), body);
    const old = oldIds[sealedDuring % oldIds.length]!;
    await assertReads(process, old, bodies.get(old)!);
    // The metrics show the progress: keys re-wrapped, and fewer left under version 1 than there were.
    const done = await metric(process, /^seal_key_rewrapped_total\{[^}]*kind="message_key"[^}]*\} (\d+)/m);
    const left = await metric(process, /^seal_key_rewrap_remaining\{[^}]*version="1"[^}]*\} (\d+)/m);
    return done >= 5 && left < running + 1 ? done : undefined;
  });
  process.child.kill('SIGKILL');
  await new Promise((resolve) => process.child.once('exit', resolve));

  // Killed in the middle: some keys under each version, none lost, each value's prefix its column.
  const middle = await versionsInDatabase(stack.pool);
  const underOne = middle.find((entry) => entry.version === 1)?.count ?? 0;
  assert.ok(underOne > 0 && underOne < running, `killed in the middle of the re-wrap: ${JSON.stringify(middle)}`);
  assert.ok(
    middle.every((entry) => entry.prefix === `k${entry.version}`),
    JSON.stringify(middle),
  );
  assert.equal(
    middle.reduce((sum, entry) => sum + entry.count, 0),
    running + sealedDuring,
  );

  // Version 1 cannot leave yet: a start without it is refused, naming the variables.
  const refusal = await refusedStart(stack, v2);
  assert.match(refusal, /Key versions that still wrap something are not configured: version 1 \(\d+ message keys/);
  assert.match(refusal, /SEAL_MASTER_KEY \(version 1\), SEAL_MASTER_KEYS or SEAL_KEY_PKCS11_KEYS/);

  // The restart goes on where the rows stand, once the killed process's lease has run out.
  process = await startSeal(stack, both);
  status = await eventually('the rotation finished', async () => {
    const now = await keyStatus(process);
    return now.rotation?.state === 'finished' ? now : undefined;
  });
  // Every version-1 key and the cluster password re-wrapped exactly once, across the kill.
  assert.equal(status.rotation!.rewrapped, running + 1);
  assert.match(
    await sealpostKeys(process, 'status'),
    new RegExp(`\\n1 +${v1Source} +0 +0 +wraps nothing: may be removed from ${v1Variable}\\n2 +\\S+ +\\d+ +1 +current`),
  );
  const one = status.versions.find((entry) => entry.version === 1)!;
  assert.deepEqual([one.messages, one.clusterPasswords, one.removable], [0, 0, true]);
  assert.equal(await metric(process, /^seal_key_rewrap_remaining\{[^}]*version="1"[^}]*\} (\d+)/m), 0);
  assert.equal(
    await metric(process, /^seal_key_rewrap_remaining\{[^}]*version="2"[^}]*\} (\d+)/m),
    running + sealedDuring + 1,
  );
  assert.deepEqual(await versionsInDatabase(stack.pool), [{ version: 2, prefix: 'k2', count: running + sealedDuring }]);
  assert.equal(await process.stop(), 0);

  // Version 1 removed: every message reads, the withdrawn ones stay gone, the cluster password still opens.
  process = await startSeal(stack, v2);
  try {
    for (const [id, body] of bodies) await assertReads(process, id, body);
    for (const id of withdrawn) assert.equal((await read(process, id)).status, 410);
    await assertReads(process, await seal(process, 'after the rotation\r\n'), 'after the rotation\r\n');
  } finally {
    await process.stop();
  }
}

describe('rotating the master key from version 1 to version 2', { timeout: 300_000 }, () => {
  let stack: Stack | undefined;
  before(async () => {
    stack = await startStack('keys_env');
  });
  after(() => stopStack(stack));

  it('re-wraps every key under version 2 across a kill -9 while mail goes on; then version 1 leaves', async () => {
    const v1 = { SEAL_MASTER_KEY: KEY_1 };
    const v2 = { SEAL_MASTER_KEYS: `2:${KEY_2}` };
    const where = { v1Source: 'environment', v1Variable: 'SEAL_MASTER_KEY', v2Source: 'environment' };
    await rotateUnderLoad(stack!, { v1, both: { ...v1, ...v2 }, v2, ...where });
  });
});

describe('a master key version in a PKCS#11 token (SoftHSM2)', { timeout: 300_000 }, () => {
  let stack: Stack | undefined;
  let hsm: SoftHsm | undefined;
  before(async () => {
    [stack, hsm] = await Promise.all([startStack('keys_hsm'), startSoftHsm()]);
    await hsm.addKey('sealpost-key-2');
    await hsm.addKey('decrypt-only', { encrypt: false });
  });
  after(async () => {
    await stopStack(stack);
    await hsm?.close();
  });

  it('rotates from the environment key to the HSM key across a kill -9; then the environment key leaves', async () => {
    const v1 = { SEAL_MASTER_KEY: KEY_1 };
    const v2 = hsm!.env('2:sealpost-key-2');
    const where = { v1Source: 'environment', v1Variable: 'SEAL_MASTER_KEY', v2Source: 'pkcs11' };
    await rotateUnderLoad(stack!, { v1, both: { ...v1, ...v2 }, v2, ...where });
    // Version 2 was the token's: what it wrapped opens with no key outside it (not the environment's version 2).
    const { rows } = await stack!.pool.query<{ id: string; wrapped_key: string }>(
      `select id, wrapped_key from seal.sealed_messages where wrapped_key like 'k2.%'`,
    );
    assert.ok(rows.length > 0);
    const outside = singleKeyring(Buffer.from(KEY_2, 'hex'), 2);
    for (const row of rows) assert.throws(() => outside.unwrap(row.wrapped_key, messageKeyLabel(row.id)), SecretError);
  });

  it('refuses a wrong PIN, a missing token, key or version at start, naming the variable; seals nothing', async () => {
    const sealedBefore = async () => {
      const { rows } = await stack!.pool.query<{ count: string }>('select count(*) from seal.sealed_messages');
      return Number(rows[0]!.count);
    };
    const env = hsm!.env('2:sealpost-key-2');
    // Started once with the token's version 2, which writes its check value (and the schema, run alone).
    const once = await startSeal(stack!, { SEAL_MASTER_KEY: KEY_1, ...env });
    await once.stop();
    const count = await sealedBefore();
    const wrongPin = join(stack!.dataDir, 'wrong.pin');
    await writeFile(wrongPin, '0000\n', { mode: 0o600 });
    assert.match(
      await refusedStart(stack!, { ...env, SEAL_KEY_PKCS11_PIN_FILE: wrongPin }),
      /SEAL_KEY_PKCS11_PIN_FILE=\S+wrong\.pin: the token in SEAL_KEY_PKCS11_SLOT=sealpost-test refused the PIN/,
    );
    assert.match(
      await refusedStart(stack!, { ...env, SEAL_KEY_PKCS11_SLOT: 'no-such-token' }),
      /SEAL_KEY_PKCS11_SLOT=no-such-token: no token in a slot of that id or with that label \(tokens present: /,
    );
    assert.match(
      await refusedStart(stack!, { ...env, SEAL_KEY_PKCS11_KEYS: '2:sealpost-key-2,3:never-created' }),
      /SEAL_KEY_PKCS11_KEYS: key version 3's label "never-created" names no secret key on the token/,
    );
    assert.match(
      await refusedStart(stack!, { ...env, SEAL_MASTER_KEY_VERSION: '4' }),
      /SEAL_MASTER_KEY_VERSION=4 names a key version that is not configured/,
    );
    // A current version that cannot wrap (a token key not allowed to encrypt) seals nothing.
    assert.match(
      await refusedStart(stack!, {
        ...env,
        SEAL_KEY_PKCS11_KEYS: '2:sealpost-key-2,5:decrypt-only',
        SEAL_MASTER_KEY_VERSION: '5',
      }),
      /SEAL_KEY_PKCS11_KEYS: the current key version 5 does not wrap and unwrap again \(.*\): nothing is sealed/,
    );
    // Version 2 given as another key than the token's, which wrapped before: refused before it wraps anything.
    assert.match(
      await refusedStart(stack!, { SEAL_MASTER_KEY: KEY_1, SEAL_MASTER_KEYS: `2:${KEY_2}` }),
      /SEAL_MASTER_KEYS: key version 2 is not the key that version 2 wrapped with before/,
    );
    assert.equal(await sealedBefore(), count);
  });
});

describe('rotating between two keys of a PKCS#11 token (SoftHSM2)', { timeout: 300_000 }, () => {
  let stack: Stack | undefined;
  let hsm: SoftHsm | undefined;
  before(async () => {
    [stack, hsm] = await Promise.all([startStack('keys_hsm_to_hsm'), startSoftHsm('sealpost-rotate')]);
    await hsm.addKey('sealpost-key-1');
    await hsm.addKey('sealpost-key-2');
  });
  after(async () => {
    await stopStack(stack);
    await hsm?.close();
  });

  it('re-wraps from version 1 to version 2, both keys in the token, across a kill -9; then 1 leaves', async () => {
    await rotateUnderLoad(stack!, {
      v1: hsm!.env('1:sealpost-key-1'),
      both: hsm!.env('1:sealpost-key-1,2:sealpost-key-2'),
      v2: hsm!.env('2:sealpost-key-2'),
      v1Source: 'pkcs11',
      v1Variable: 'SEAL_KEY_PKCS11_KEYS',
      v2Source: 'pkcs11',
    });
  });
});
