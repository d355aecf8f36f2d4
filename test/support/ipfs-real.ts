import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { base32 } from 'multiformats/bases/base32';
import { CID } from 'multiformats/cid';
import { freePort } from './ports.ts';
import { createTestCertificate, type TestCertificate } from './tls.ts';

/**
 * The real IPFS Cluster (ipfs-cluster-service) and Kubo (ipfs), built from source by
 * scripts/build-ipfs.sh into a cache (`.ci/run` builds them first; here the script only finds them).
 * Each cluster is one peer with its own Kubo; everything listens on 127.0.0.1 only, with no bootstrap,
 * no mDNS, no routing and no telemetry, so nothing leaves the machine.
 */

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

let binaries: Promise<string> | undefined;

/** The folder with `ipfs` and `ipfs-cluster-service`, built once if the cache does not have them. */
export function ipfsBinaries(): Promise<string> {
  binaries ??= run('bash', [join(ROOT, 'scripts/build-ipfs.sh')], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 60 * 60 * 1000,
  }).then(({ stdout }) => stdout.trim().split('\n').at(-1)!);
  return binaries;
}

/** Where `ipfs-cluster-ctl` finds a cluster's REST API. */
export interface ClusterCtlTarget {
  restPort: number;
  user: string;
  pass: string;
  secure: boolean;
  /** The CA to trust for an HTTPS REST API (Go reads it from SSL_CERT_FILE). */
  caPath?: string;
}

/**
 * Runs the real `ipfs-cluster-ctl` (built with the service) against a REST API on 127.0.0.1, with
 * Basic auth, over HTTPS only when the cluster is `secure` (the flag implies HTTPS unless forced off).
 * Resolves with its exit code and output; a failing command is an answer here, not an exception.
 */
export async function clusterCtl(
  target: ClusterCtlTarget,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = await ipfsBinaries();
  const flags = ['--host', `/ip4/127.0.0.1/tcp/${target.restPort}`, '--basic-auth', `${target.user}:${target.pass}`];
  if (!target.secure) flags.push('--force-http');
  const env = { ...process.env, ...(target.caPath ? { SSL_CERT_FILE: target.caPath } : {}) };
  try {
    const { stdout, stderr } = await run(join(bin, 'ipfs-cluster-ctl'), [...flags, ...args], { env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

export interface RealCluster {
  /** REST API (the `port` of a cluster configuration). */
  restPort: number;
  /** The peer's IPFS proxy (IPFS_PROXY_PORT for this cluster). */
  proxyPort: number;
  /** Kubo's own RPC API. */
  kuboApiPort: number;
  secure: boolean;
  user: string;
  pass: string;
  /** The cluster's peer id. */
  peerId: string;
  /** Stops the Kubo daemon behind the cluster (the cluster keeps running and reports it). */
  stopKubo(): Promise<void>;
  /**
   * Flips one bit in the middle of the block `cid` in Kubo's blockstore on disk (flatfs), as a failing
   * disk would: same CID, other bytes. The block of a small file (one chunk, under 256 KiB) is the file.
   */
  damageBlock(cid: string): Promise<void>;
  startKubo(): Promise<void>;
  stop(): Promise<void>;
  /** What the two daemons printed, for a failing test's message. */
  output(): string;
}

export interface RealClusters {
  /** Plain HTTP with Basic auth. */
  primary: RealCluster;
  /** HTTPS (a self-signed certificate; trust `ca.certPath` as IPFS_CLUSTER_CA_FILE) with Basic auth. */
  secondary: RealCluster;
  ca: TestCertificate;
  stop(): Promise<void>;
}

interface Ports {
  kuboApi: number;
  kuboSwarm: number;
  rest: number;
  proxy: number;
  clusterSwarm: number;
  pinsvc: number;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

function daemon(binary: string, args: string[], env: Record<string, string>, log: string[]): ChildProcess {
  const child = spawn(binary, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (chunk: Buffer) => {
    log.push(chunk.toString('utf8'));
    if (log.length > 400) log.splice(0, log.length - 400);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

async function stopDaemon(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  log: string[],
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `${what} did not come up within ${timeoutMs} ms (${String(last)}); output:\n${log.join('').slice(-4000)}`,
  );
}

/**
 * Kubo's flatfs keeps a block as blocks/<shard>/<key>.data: the key is the multihash in upper-case base32
 * without padding (dshelp.MultihashToDsKey), the shard its next-to-last two characters (`next-to-last/2`).
 */
async function damageFlatfsBlock(kuboPath: string, cid: string): Promise<void> {
  const key = base32.baseEncode(CID.parse(cid).multihash.bytes).toUpperCase();
  const file = join(kuboPath, 'blocks', key.slice(-3, -1), `${key}.data`);
  const bytes = await readFile(file);
  bytes[bytes.length >> 1]! ^= 0x01;
  await writeFile(file, bytes);
}

async function editJson(path: string, edit: (value: any) => void): Promise<void> {
  const value = JSON.parse(await readFile(path, 'utf8'));
  edit(value);
  await writeFile(path, JSON.stringify(value, null, 2));
}

/** The Authorization header of a cluster's Basic credentials (REST API and IPFS proxy alike). */
export function basicAuthorization(cluster: Pick<RealCluster, 'user' | 'pass'>): string {
  return `Basic ${Buffer.from(`${cluster.user}:${cluster.pass}`).toString('base64')}`;
}

/** GET on the cluster REST API with Basic auth, over HTTPS when `ca` is given. */
export async function restGet(
  cluster: Pick<RealCluster, 'restPort' | 'user' | 'pass' | 'secure'>,
  path: string,
  ca?: string,
): Promise<{ status: number; body: any }> {
  const authorization = basicAuthorization(cluster);
  if (!cluster.secure) {
    const res = await fetch(`http://127.0.0.1:${cluster.restPort}${path}`, { headers: { authorization } });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
  return new Promise((resolvePromise, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port: cluster.restPort, path, headers: { authorization }, ca },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolvePromise({ status: res.statusCode!, body: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on('error', reject);
  });
}

async function initNode(
  bin: string,
  dir: string,
  ports: Ports,
  options: { secure: boolean; user: string; pass: string; certificate: TestCertificate },
) {
  const kuboPath = join(dir, 'kubo');
  const clusterPath = join(dir, 'cluster');
  const kuboEnv = { IPFS_PATH: kuboPath, IPFS_TELEMETRY: 'off' };
  await mkdir(dir, { recursive: true });
  await run(join(bin, 'ipfs'), ['init', '--profile=test', '--empty-repo'], { env: { ...process.env, ...kuboEnv } });
  await editJson(join(kuboPath, 'config'), (config) => {
    config.Addresses.API = `/ip4/127.0.0.1/tcp/${ports.kuboApi}`;
    config.Addresses.Swarm = [`/ip4/127.0.0.1/tcp/${ports.kuboSwarm}`];
    config.Addresses.Gateway = '/ip4/127.0.0.1/tcp/0';
    // Nothing but the peered node: no DHT, no delegated routing, no telemetry.
    config.Routing = { ...config.Routing, Type: 'none' };
    config.Plugins = { Plugins: { telemetry: { Config: { Mode: 'off' } } } };
  });
  const kuboId = JSON.parse(await readFile(join(kuboPath, 'config'), 'utf8')).Identity.PeerID as string;

  const clusterEnv = { IPFS_CLUSTER_PATH: clusterPath };
  await run(join(bin, 'ipfs-cluster-service'), ['init', '--consensus', 'crdt'], {
    env: { ...process.env, ...clusterEnv },
  });
  await editJson(join(clusterPath, 'service.json'), (config) => {
    config.cluster.listen_multiaddress = [`/ip4/127.0.0.1/tcp/${ports.clusterSwarm}`];
    config.cluster.mdns_interval = '0s';
    config.cluster.peername = `sealpost-test-${ports.rest}`;
    const rest = config.api.restapi;
    rest.http_listen_multiaddress = `/ip4/127.0.0.1/tcp/${ports.rest}`;
    rest.basic_auth_credentials = { [options.user]: options.pass };
    if (options.secure) {
      rest.ssl_cert_file = options.certificate.certPath;
      rest.ssl_key_file = options.certificate.keyPath;
    }
    config.api.ipfsproxy.listen_multiaddress = `/ip4/127.0.0.1/tcp/${ports.proxy}`;
    config.api.ipfsproxy.node_multiaddress = `/ip4/127.0.0.1/tcp/${ports.kuboApi}`;
    config.api.pinsvcapi.http_listen_multiaddress = `/ip4/127.0.0.1/tcp/${ports.pinsvc}`;
    config.ipfs_connector.ipfshttp.node_multiaddress = `/ip4/127.0.0.1/tcp/${ports.kuboApi}`;
  });
  return { kuboPath, clusterPath, kuboEnv, clusterEnv, kuboId };
}

/**
 * Two single-peer clusters on 127.0.0.1, each with its own Kubo: the primary's REST API in plain HTTP,
 * the secondary's over HTTPS with a test certificate, both with Basic auth. The two Kubo nodes peer
 * with each other (Peering.Peers, so they reconnect after a restart): the secondary fetches the blocks
 * it is asked to pin from the primary, as a real deployment's nodes would over their swarm.
 */
export async function startRealClusters(): Promise<RealClusters> {
  const bin = await ipfsBinaries();
  const root = await mkdtemp(join(tmpdir(), 'sealpost-ipfs-real-'));
  const ca = await createTestCertificate();
  const allPorts: Ports[] = [];
  for (let i = 0; i < 2; i++) {
    allPorts.push({
      kuboApi: await freePort(),
      kuboSwarm: await freePort(),
      rest: await freePort(),
      proxy: await freePort(),
      clusterSwarm: await freePort(),
      pinsvc: await freePort(),
    });
  }
  const specs = [
    { secure: false, user: 'sealer', pass: 'primary-pass' },
    { secure: true, user: 'sealer', pass: 'secondary-pass' },
  ];
  const nodes = await Promise.all(
    specs.map((spec, i) => initNode(bin, join(root, `node${i}`), allPorts[i]!, { ...spec, certificate: ca })),
  );
  await Promise.all(
    nodes.map((node, i) => {
      const other = 1 - i;
      return editJson(join(node.kuboPath, 'config'), (config) => {
        config.Peering = {
          Peers: [{ ID: nodes[other]!.kuboId, Addrs: [`/ip4/127.0.0.1/tcp/${allPorts[other]!.kuboSwarm}`] }],
        };
      });
    }),
  );

  const clusters: RealCluster[] = [];
  try {
    for (const [i, node] of nodes.entries()) {
      const ports = allPorts[i]!;
      const spec = specs[i]!;
      const log: string[] = [];
      let kubo: ChildProcess | undefined;
      let cluster: ChildProcess | undefined;
      const startKubo = async () => {
        kubo = daemon(join(bin, 'ipfs'), ['daemon', '--migrate=false'], node.kuboEnv, log);
        await until(
          `Kubo of cluster ${i}`,
          async () =>
            (await fetch(`http://127.0.0.1:${ports.kuboApi}/api/v0/id`, { method: 'POST' })).ok ? true : undefined,
          log,
        );
      };
      await startKubo();
      cluster = daemon(join(bin, 'ipfs-cluster-service'), ['daemon'], node.clusterEnv, log);
      const real: RealCluster = {
        restPort: ports.rest,
        proxyPort: ports.proxy,
        kuboApiPort: ports.kuboApi,
        secure: spec.secure,
        user: spec.user,
        pass: spec.pass,
        peerId: '',
        stopKubo: () => stopDaemon(kubo),
        startKubo,
        damageBlock: (cid) => damageFlatfsBlock(node.kuboPath, cid),
        async stop() {
          await stopDaemon(cluster);
          await stopDaemon(kubo);
        },
        output: () => log.join(''),
      };
      const id = await until(
        `IPFS Cluster ${i}`,
        async () => {
          const answer = await restGet(real, '/id', ca.cert);
          return answer.status === 200 && answer.body.ipfs?.error === '' ? (answer.body.id as string) : undefined;
        },
        log,
      );
      real.peerId = id;
      clusters.push(real);
    }
  } catch (error) {
    for (const cluster of clusters) await cluster.stop();
    for (const child of running) child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
    await ca.remove();
    throw error;
  }
  return {
    primary: clusters[0]!,
    secondary: clusters[1]!,
    ca,
    async stop() {
      await Promise.all(clusters.map((cluster) => cluster.stop()));
      await rm(root, { recursive: true, force: true });
      await ca.remove();
    },
  };
}
