/**
 * A throwaway, real S3 server for tests: OpenStack Swift with its s3api middleware (Debian packages
 * swift-proxy swift-account swift-container swift-object memcached), adapted from
 * /work/shared/reference/swift-s3.sh. MinIO and friends cannot be installed here; Swift can.
 *
 * Every server runs in its own detached process group (Swift forks a worker per server), so killing
 * the group `-pid` takes the worker along. Three safety nets stop leaks when a test fails: stop(), a
 * process 'exit' handler, and a tiny shell watchdog that kills everything once this Node process is gone
 * (even after SIGKILL, when no handler runs).
 *
 * Start time, measured on the project's 2-core machines: 2.9–3.2 s from call to the first working S3
 * request (rings 0.4 s, then the four Python servers booting side by side). resume() takes ~0.8–1.3 s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { closeSync, existsSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';

export interface S3TestServer {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: true;
  /** Kills every process and removes the temp dir. */
  stop(): Promise<void>;
  /** Kills the proxy only: S3 answers "connection refused" while data stays on disk. */
  pause(): Promise<void>;
  /** Restarts the proxy on the same port and waits until S3 answers again. */
  resume(): Promise<void>;
}

// Credentials of tempauth's user `test:tester` (see the proxy config below).
const ACCESS_KEY_ID = 'test:tester';
const SECRET_ACCESS_KEY = 'testing';
const REGION = 'us-east-1';

/** Every process group this Node process started, so the 'exit' handler can kill what stop() missed. */
const liveGroups = new Set<number>();
let exitHandlerInstalled = false;

function killGroup(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
  liveGroups.delete(pid);
}

/** A free port on 127.0.0.1 (the OS picks it; tiny race until Swift binds it, acceptable in tests). */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const SWIFT_PROXY = '/usr/bin/swift-proxy-server';

/** Why startS3Server cannot run here (OpenStack Swift is missing; `.ci/run` installs it), or undefined. */
export function swiftUnavailable(): string | undefined {
  if (existsSync(SWIFT_PROXY)) return undefined;
  return (
    'OpenStack Swift is not installed ' +
    '(apt-get install swift-proxy swift-account swift-container swift-object memcached)'
  );
}

/** The Python that has the `swift` module: the one in swift-proxy-server's shebang (not pyenv's). */
async function swiftPython(): Promise<string> {
  const missing = swiftUnavailable();
  if (missing) throw new Error(missing);
  const head = await readFile(SWIFT_PROXY, 'utf8');
  return /^#!\s*(\S+)/.exec(head)?.[1] ?? '/usr/bin/python3';
}

function commonConf(dir: string, port: number): string {
  // workers = 1 keeps memory down; user = the current user so Swift's privilege drop is a no-op.
  const user = userInfo().username;
  return [
    '[DEFAULT]',
    'bind_ip = 127.0.0.1',
    `bind_port = ${port}`,
    `devices = ${dir}/srv`,
    'mount_check = false',
    `swift_dir = ${dir}/etc`,
    `user = ${user}`,
    'workers = 1',
    'log_level = WARNING',
    '',
  ].join('\n');
}

/** proxy-server.conf's middleware, in the order a request goes through them. */
const PROXY_PIPELINE =
  'catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth ' +
  'copy slo dlo proxy-logging proxy-server';

function proxyConf(dir: string, port: number, memcachedPort: number): string {
  return `${commonConf(dir, port)}
[pipeline:main]
pipeline = ${PROXY_PIPELINE}
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
allow_account_management = true
[filter:s3api]
use = egg:swift#s3api
location = ${REGION}
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = ${SECRET_ACCESS_KEY} .admin
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:${memcachedPort}
`;
}

/** One Python process builds all three rings: ~0.4 s instead of ~1.2 s per swift-ring-builder trio. */
function ringScript(ports: { account: number; container: number; object: number }): string {
  return `
from swift.common.ring import RingBuilder
for kind, port in (('account', ${ports.account}), ('container', ${ports.container}), ('object', ${ports.object})):
    b = RingBuilder(8, 1, 1)
    b.add_dev({'region': 1, 'zone': 1, 'ip': '127.0.0.1', 'port': port, 'device': 'd1', 'weight': 100})
    b.rebalance()
    b.get_ring().save(kind + '.ring.gz')
`;
}

/** Spawns `command` as the leader of a new process group with output appended to `logFile`. */
function spawnGroup(command: string, args: string[], logFile: string, track = true): ChildProcess {
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd); // The child has its own copy.
  // A failed spawn (binary missing) must not crash the test process; readiness then times out.
  child.on('error', (error) => console.error(`s3-server: cannot start ${command}: ${error.message}`));
  if (child.pid && track) liveGroups.add(child.pid);
  // Detached children must not keep the test process alive.
  child.unref();
  return child;
}

async function run(command: string, args: string[], cwd: string): Promise<void> {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`${command} failed (${code}): ${stderr}`);
}

/** Swift starts in ~3 s on a quiet machine; a loaded 2-core CI machine can take many times that. */
const START_TIMEOUT_MS = 90_000;

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number, logs: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(50);
  }
  throw new Error(`Swift test server: ${what} not ready after ${timeoutMs} ms (logs in ${logs})`);
}

/** Waits until a child exits (after a kill), so its port is free again for resume(). */
async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  // Children are unref'd; hold a ref while waiting or Node may exit with the wait still pending.
  child.ref();
  try {
    await once(child, 'exit');
  } finally {
    child.unref();
  }
}

export async function startS3Server(): Promise<S3TestServer> {
  const python = await swiftPython();
  const dir = await mkdtemp(join(tmpdir(), 'sealpost-swift-'));
  const etc = join(dir, 'etc');
  const logs = join(dir, 'log');
  await Promise.all([mkdir(etc), mkdir(join(dir, 'srv', 'd1'), { recursive: true }), mkdir(logs)]);

  const [proxyPort, accountPort, containerPort, objectPort, memcachedPort] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  const ports = { account: accountPort!, container: containerPort!, object: objectPort! };
  await writeFile(
    join(etc, 'swift.conf'),
    '[swift-hash]\nswift_hash_path_suffix = sealpost-test\nswift_hash_path_prefix = sealpost-test\n',
  );
  for (const kind of ['account', 'container', 'object'] as const) {
    const conf =
      `${commonConf(dir, ports[kind])}\n[pipeline:main]\npipeline = ${kind}-server\n` +
      `[app:${kind}-server]\nuse = egg:swift#${kind}\n`;
    await writeFile(join(etc, `${kind}-server.conf`), conf);
  }
  await writeFile(join(etc, 'proxy-server.conf'), proxyConf(dir, proxyPort!, memcachedPort!));
  await run(python, ['-c', ringScript(ports)], etc);

  if (!exitHandlerInstalled) {
    exitHandlerInstalled = true;
    process.on('exit', () => {
      for (const pid of liveGroups) killGroup(pid);
    });
  }

  const children = new Map<string, ChildProcess>();
  // memcached refuses to run as root unless told which user to become.
  const memcachedArgs = [
    '-l',
    '127.0.0.1',
    '-p',
    String(memcachedPort),
    '-U',
    '0',
    ...(process.getuid?.() === 0 ? ['-u', 'nobody'] : []),
  ];
  children.set('memcached', spawnGroup('memcached', memcachedArgs, join(logs, 'memcached.log')));
  const startSwift = (kind: string) =>
    children.set(
      kind,
      spawnGroup(`swift-${kind}-server`, [join(etc, `${kind}-server.conf`), '-v'], join(logs, `${kind}.log`)),
    );
  for (const kind of ['account', 'container', 'object', 'proxy']) startSwift(kind);

  // The watchdog: polls this Node process and kills every group (its pids are in groups.txt, rewritten
  // by resume()) then removes the dir once we are gone. stop() kills the watchdog itself first.
  const groupsFile = join(dir, 'groups.txt');
  const writeGroups = () => writeFile(groupsFile, `${[...children.values()].map((c) => c.pid).join(' ')}\n`);
  await writeGroups();
  const watchdog = spawnGroup(
    'sh',
    [
      '-c',
      `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ` +
        `for p in $(cat "${groupsFile}"); do kill -9 -- -$p 2>/dev/null; done; rm -rf "${dir}"`,
    ],
    '/dev/null',
    false, // Not killed by the 'exit' handler: it must outlive us to remove the dir.
  );

  const endpoint = `http://127.0.0.1:${proxyPort}`;
  const s3 = new S3Client({
    endpoint,
    region: REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY },
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true },
  });
  const ready = async (): Promise<void> => {
    await waitUntil('healthcheck', async () => (await fetch(`${endpoint}/healthcheck`)).ok, START_TIMEOUT_MS, logs);
    // The proxy may be up before the account/container servers: wait for a real, signed S3 call.
    await waitUntil(
      'S3 API',
      async () => {
        await s3.send(new ListBucketsCommand({}));
        return true;
      },
      START_TIMEOUT_MS,
      logs,
    );
  };

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    s3.destroy();
    killGroup(watchdog.pid);
    const all = [...children.values()];
    for (const child of all) killGroup(child.pid);
    await Promise.all(all.map(exited));
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await ready();
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }

  return {
    endpoint,
    region: REGION,
    accessKeyId: ACCESS_KEY_ID,
    secretAccessKey: SECRET_ACCESS_KEY,
    forcePathStyle: true,
    stop,
    async pause() {
      const proxy = children.get('proxy')!;
      killGroup(proxy.pid);
      await exited(proxy);
    },
    async resume() {
      const proxy = children.get('proxy')!;
      if (proxy.exitCode === null && proxy.signalCode === null) return; // Not paused.
      startSwift('proxy');
      await writeGroups();
      await ready();
    },
  };
}

/** A valid bucket name that no other test uses: lowercase letters, digits, dashes; 3–63 characters. */
export function uniqueBucket(prefix = 'test'): string {
  const clean =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'test';
  const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  return `${clean.slice(0, 63 - suffix.length - 1)}-${suffix}`.padEnd(3, '0');
}

/** The environment that points a Sealpost process (or a benchmark's helper) at `server`'s `bucket`. */
export function s3Env(server: S3TestServer, bucket: string): Record<string, string> {
  return {
    S3_ENDPOINT: server.endpoint,
    S3_BUCKET: bucket,
    S3_REGION: server.region,
    S3_ACCESS_KEY_ID: server.accessKeyId,
    S3_SECRET_ACCESS_KEY: server.secretAccessKey,
    S3_FORCE_PATH_STYLE: 'true',
  };
}
