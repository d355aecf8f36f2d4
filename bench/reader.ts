// The recipient's read: GET /v1/message of a signed-in reader for a 100 KB and a 10 MB sealed message,
// p50/p99 one request at a time, next to the same content read straight from the cluster's IPFS proxy
// and decrypted by a bare script in the same run (the floor: fetch + AES-GCM, nothing else).
// Sealpost's path is what operators run: the auth service and the seal service each in its own process
// (`sealpost start auth`, `sealpost start seal`, LOG_LEVEL info) and the real IPFS Cluster and Kubo
// (test/support/ipfs-real.ts, the primary cluster: plain HTTP, Basic auth); it also verifies the SHA-256,
// parses the MIME message and answers JSON. Both sides fetch the same ciphertext from the same proxy.
// This process holds the load client only, so that its own garbage collection lands in neither service's
// figures (bench/NOTES.md, "Reader"); the bare reads run in a
// process of their own, in turns with Sealpost's. A third side, the floor (support/reader-floor.ts, a process
// of its own read by this one's client as Sealpost is), does only the work a read needs, in one process: the
// row, the key, the cat, decryption and hash, the reader's parse (readMessage) and a JSON answer.
//
//   node --import tsx bench/reader.ts [--small 200] [--large 10]   (requests per message size; 0 skips it)
//   node --import tsx bench/reader.ts --round 50
//     reads a side per turn (the default): the bare reads (a process of their own, bench/support/bare-read.ts)
//     and Sealpost's take turns; a round as large as the count reads all bare reads first
//   node --import tsx bench/reader.ts --profile DIR
//     profiles the auth and the seal process (their .cpuprofile files land in DIR when they stop)
//   node --import tsx bench/reader.ts --trace-gc
//     runs both services with V8's --trace-gc and prints, per service, its Mark-Compacts and scavenges
//     (count, total and longest pause, from the start of the process): what makes the p99's tail
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { openDatabase } from '../src/kernel/db/database.ts';
import { singleKeyring } from '../src/seal/crypto/environment-key.ts';
import { messageKeyLabel } from '../src/seal/crypto/secret-box.ts';
import { basicAuthorization, startRealClusters } from '../test/support/ipfs-real.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { postSeal, rawMessage, TEST_MASTER_KEY } from '../test/support/seal.ts';
import { startSealpostProcess } from '../test/support/sealpost-process.ts';
import { startSmsCapture } from '../test/support/sms-capture.ts';
import { authBenchEnv } from './support/auth-env.ts';
import type { BareReadRound, BareReadSetup } from './support/bare-read.ts';
import type { ReaderFloorSetup } from './support/reader-floor.ts';
import { stopOnExit } from './support/cleanup.ts';
import { cpuProfileArgs, loadAverage, machineLine, peakRssMb, treeCpuMs } from './support/proc.ts';
import { percentile } from './support/smtp-load.ts';
import { printResult, type Result } from './support/result.ts';

const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '200' },
    large: { type: 'string', default: '10' },
    profile: { type: 'string' },
    'trace-gc': { type: 'boolean', default: false },
    round: { type: 'string', default: '50' },
  },
});
const ROUND = Number(values.round);
if (!Number.isInteger(ROUND) || ROUND < 1) throw new Error('--round: a number of reads, at least 1');
const READER = { email: 'reader@example.com', mobile: '+41791234567' };

const SERVICE_TOKEN = 'bench-service-token';

/** Where both sides read the ciphertext: the real primary cluster's IPFS proxy (Kubo behind it). */
const clusters = await startRealClusters();
const { primary } = clusters;
const proxyUrl = `http://127.0.0.1:${primary.proxyPort}`;
const sms = await startSmsCapture();
const database = await createTestDatabase('bench_reader');
const keys = await openDatabase({ url: database.url, poolSize: 1 });
const sealDir = await mkdtemp(join(tmpdir(), 'sealpost-bench-reader-seal-'));
const authDir = await mkdtemp(join(tmpdir(), 'sealpost-bench-reader-'));
const traceGc = values['trace-gc'] ? ['--trace-gc'] : [];
const seal = await startSealpostProcess(
  {
    DATABASE_URL: database.url,
    SEALPOST_DATA_DIR: sealDir,
    SEAL_MASTER_KEY: TEST_MASTER_KEY,
    SERVICE_TOKEN,
    ADMIN_TOKEN: 'bench-admin',
    IPFS_CLUSTER_HOST: '127.0.0.1',
    IPFS_CLUSTER_PORT: String(primary.restPort),
    IPFS_CLUSTER_SECURE: 'false',
    IPFS_CLUSTER_USER: primary.user,
    IPFS_CLUSTER_PASS: primary.pass,
    IPFS_PROXY_PORT: String(primary.proxyPort),
  },
  { which: 'seal', nodeArgs: [...cpuProfileArgs(values.profile, 'seal'), ...traceGc] },
);
stopOnExit(seal.child);
const sealService = { url: seal.urls.seal, serviceToken: SERVICE_TOKEN };
const auth = await startSealpostProcess(
  authBenchEnv({
    databaseUrl: database.url,
    dataDir: authDir,
    serviceToken: SERVICE_TOKEN,
    sealUrl: sealService.url,
    smsUrl: sms.url,
  }),
  { which: 'auth', nodeArgs: [...cpuProfileArgs(values.profile, 'auth'), ...traceGc] },
);
stopOnExit(auth.child);

const agent = new Agent({ keepAlive: true });
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}
function call(url: string, method: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(url, {
      method,
      agent,
      headers: {
        ...headers,
        ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}
const cookieOf = (answer: Answer) => {
  const line = answer.headers['set-cookie'];
  return (Array.isArray(line) ? line[0] : line)?.split(';')[0];
};

/** A sealed message of about `size` bytes for READER, who signs in by SMS. */
async function sealOf(size: number): Promise<{ id: string; cid: string }> {
  const line = `${randomBytes(57).toString('base64')}\r\n`;
  const raw = rawMessage({
    to: READER.email,
    mobiles: [`${READER.email}=${READER.mobile}`],
    body: line.repeat(Math.ceil(size / line.length)),
  });
  const response = await postSeal(sealService, raw);
  if (response.status !== 201) throw new Error(`seal: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: string; cid: string };
}

/** A signed-in session for the message: GET /v1/config, a code by SMS, verify. */
async function signIn(messageId: string): Promise<string> {
  const base = auth.urls.auth;
  const first = await call(`${base}/v1/config?messageId=${messageId}`, 'GET');
  const cookie = cookieOf(first)!;
  const csrf = String(first.headers['x-csrf-token']);
  const sent = await call(
    `${base}/v1/auth/code`,
    'POST',
    { cookie, 'x-csrf-token': csrf },
    { messageId, email: READER.email, mobile: READER.mobile, method: 'sms' },
  );
  if (sent.status !== 200) throw new Error(`code: ${sent.status} ${sent.body}`);
  const code = /\b(\d{6})\b/.exec(sms.messages.at(-1)!.text)![1]!;
  const verified = await call(`${base}/v1/auth/verify`, 'POST', { cookie, 'x-csrf-token': csrf }, { code });
  if (verified.status !== 200) throw new Error(`verify: ${verified.status} ${verified.body}`);
  return cookieOf(verified)!;
}

interface Timing {
  p50: number;
  p99: number;
  /** The reading process per read: the client, and for the bare read the decryption. */
  ownCpu: number;
}

/** One of bench/support's processes, forked (it answers over IPC) and stopped with this one. */
function forkSupport(script: string): ChildProcess {
  const path = fileURLToPath(new URL(`./support/${script}`, import.meta.url));
  return stopOnExit(fork(path, [], { execArgv: ['--import', 'tsx'] }));
}
/** Sends `message` to a forked process and waits for its answer (an `error` field rejects). */
function ask<T>(child: ChildProcess, name: string, message: object): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (answer: T & { error?: string }) =>
      answer.error ? reject(new Error(`${name}: ${answer.error}`)) : resolve(answer),
    );
    child.send(message);
  });
}

/** The bare reads' process (bench/support/bare-read.ts), forked once and set up per message. */
const bareReader = forkSupport('bare-read.ts');
function askBareReader<T>(message: { setup: BareReadSetup } | { reads: number }): Promise<T> {
  return ask(bareReader, 'bare read', message);
}

/** The floor's server (bench/support/reader-floor.ts), forked once; GET {floorUrl}/message/{id}. */
const floorReader = forkSupport('reader-floor.ts');
const floorSetup: ReaderFloorSetup = {
  databaseUrl: database.url,
  masterKey: TEST_MASTER_KEY,
  proxyUrl,
  authorization: basicAuthorization(primary),
};
const { port: floorPort } = await ask<{ port: number }>(floorReader, 'reader floor', { setup: floorSetup });
const floorUrl = `http://127.0.0.1:${floorPort}`;

/**
 * p50/p99 of `count` reads of each kind, one read at a time, in turns of ROUND reads a side: the bare
 * process's round, then this process's round of GET /v1/message. Both sides sample the same stretches
 * of the host's weather (Kubo's collector, other processes), and each client process collects only its
 * own garbage (bench/NOTES.md, "Reader"). Also returns the CPU per Sealpost
 * read of its two processes, which the bare rounds leave idle.
 */
async function timed(count: number, bare: BareReadSetup, floor: () => Promise<void>, ours: () => Promise<void>) {
  await askBareReader<{ ready: true }>({ setup: bare });
  await floor(); // warm-up
  await ours();
  const latencies = { bare: [] as number[], floor: [] as number[], ours: [] as number[] };
  const ownCpu = { bare: 0, floor: 0, ours: 0 };
  const cpu = {
    auth: treeCpuMs(auth.child.pid!),
    seal: treeCpuMs(seal.child.pid!),
    floor: treeCpuMs(floorReader.pid!),
  };
  const clientRound = async (side: 'floor' | 'ours', reads: number, read: () => Promise<void>) => {
    const own = process.cpuUsage();
    for (let i = 0; i < reads; i++) {
      const t = performance.now();
      await read();
      latencies[side].push(performance.now() - t);
    }
    const used = process.cpuUsage(own);
    ownCpu[side] += (used.user + used.system) / 1000;
  };
  for (let done = 0; done < count; done += ROUND) {
    const reads = Math.min(ROUND, count - done);
    const round = await askBareReader<BareReadRound>({ reads });
    latencies.bare.push(...round.latencies);
    ownCpu.bare += round.cpuMs;
    await clientRound('floor', reads, floor);
    await clientRound('ours', reads, ours);
  }
  const timing = (side: 'bare' | 'floor' | 'ours'): Timing => {
    const sorted = latencies[side].sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), ownCpu: ownCpu[side] / count };
  };
  return {
    bare: timing('bare'),
    floor: timing('floor'),
    ours: timing('ours'),
    authCpu: (treeCpuMs(auth.child.pid!) - cpu.auth) / count,
    sealCpu: (treeCpuMs(seal.child.pid!) - cpu.seal) / count,
    floorCpu: (treeCpuMs(floorReader.pid!) - cpu.floor) / count,
  };
}

/** Counts, total and longest pause of each kind of collection in V8's --trace-gc lines. */
function gcPauses(traceLines: string): string {
  const kinds = new Map<string, number[]>();
  for (const match of traceLines.matchAll(/ (Mark-Compact|Scavenge)\b[^\n]*?, ([\d.]+) \/ [\d.]+ ms/g)) {
    kinds.set(match[1]!, [...(kinds.get(match[1]!) ?? []), Number(match[2])]);
  }
  return ['Mark-Compact', 'Scavenge']
    .map((kind) => {
      const pauses = kinds.get(kind) ?? [];
      const total = pauses.reduce((sum, ms) => sum + ms, 0);
      return `${pauses.length} ${kind}s (${total.toFixed(0)} ms, longest ${Math.max(0, ...pauses).toFixed(1)} ms)`;
    })
    .join(', ');
}

const latency = (t: { p50: number; p99: number }) =>
  `p50 ${t.p50.toFixed(1).padStart(7)} ms  p99 ${t.p99.toFixed(1).padStart(7)} ms`;

try {
  console.log('== Reader: GET /v1/message of a signed-in reader, one request at a time');
  console.log("   content from the real IPFS Cluster's proxy; auth and seal each in a process of its own");
  console.log(`   the bare reads (a process of their own) and Sealpost's take turns, ${ROUND} reads a side`);
  console.log(`   ${machineLine()}`);
  const summary: string[] = [];
  const goals: Result[] = [];
  for (const [label, size, count] of [
    ['100 KB', 100 * 1024, Number(values.small)],
    ['10 MB', 10 * 1024 * 1024, Number(values.large)],
  ] as const) {
    if (count === 0) continue; // --large 0: the small message alone, e.g. for a profile of it
    const sealed = await sealOf(size);
    const cookie = await signIn(sealed.id);
    const row = await sql<{
      wrapped_key: string;
    }>`select wrapped_key from seal.sealed_messages where id = ${sealed.id}`.execute(keys.db);
    const key = singleKeyring(Buffer.from(TEST_MASTER_KEY, 'hex')).unwrap(
      row.rows[0]!.wrapped_key,
      messageKeyLabel(sealed.id),
    );
    const bareSetup = {
      url: `${proxyUrl}/api/v0/cat?arg=${sealed.cid}`,
      authorization: basicAuthorization(primary),
      key: key.toString('hex'),
    };
    const readFloor = async () => {
      const answer = await call(`${floorUrl}/message/${sealed.id}`, 'GET');
      if (answer.status !== 200) throw new Error(`floor: ${answer.status} ${answer.body.subarray(0, 300)}`);
    };
    const { bare, floor, ours, authCpu, sealCpu, floorCpu } = await timed(count, bareSetup, readFloor, async () => {
      const answer = await call(`${auth.urls.auth}/v1/message`, 'GET', { cookie });
      if (answer.status !== 200) throw new Error(`GET /v1/message: ${answer.status} ${answer.body.subarray(0, 300)}`);
    });
    console.log(
      `${label.padEnd(6)} proxy + decrypt (bare)  ${latency(bare)}  ` +
        `bare process CPU ${bare.ownCpu.toFixed(1)} ms/req (client, decryption)`,
    );
    console.log(
      `${label.padEnd(6)} the floor (one process) ${latency(floor)}  ` +
        `CPU per request: floor ${floorCpu.toFixed(1)} ms, bench process ${floor.ownCpu.toFixed(1)} ms (client)`,
    );
    console.log(
      `${label.padEnd(6)} GET /v1/message         ${latency(ours)}  ` +
        `CPU per request: auth ${authCpu.toFixed(1)} ms, seal ${sealCpu.toFixed(1)} ms, ` +
        `bench process ${ours.ownCpu.toFixed(1)} ms (client)`,
    );
    goals.push({
      goal: `reader, GET /v1/message ${label.trim()}`,
      target: '≥ 0.9× the floor',
      unit: 'ms p99',
      figure: ours.p99,
      baseline: bare.p99,
      baselineName: 'proxy + decrypt (bare)',
      floor: floor.p99,
      floorName: 'reader floor',
      // A latency: the ratio is the floor's over Sealpost's, so that higher is better as for throughput.
      ratio: floor.p99 / ours.p99,
      met: floor.p99 / ours.p99 >= 0.9,
      note: `p50 ${ours.p50.toFixed(1)} ms, the floor's ${floor.p50.toFixed(1)}`,
    });
    summary.push(
      `${label}: GET /v1/message p99 ${(ours.p99 / bare.p99).toFixed(2)}× the bare read-and-decrypt ` +
        `(p50 ${(ours.p50 / bare.p50).toFixed(2)}×); the floor's p99 ${(floor.p99 / bare.p99).toFixed(2)}× ` +
        `(p50 ${(floor.p50 / bare.p50).toFixed(2)}×), Sealpost's ${(ours.p99 / floor.p99).toFixed(2)}× the floor's`,
    );
  }
  console.log(summary.join('\n'));
  console.log(
    `   peak RSS: auth ${peakRssMb(auth.child.pid!).toFixed(0)} MB, seal ${peakRssMb(seal.child.pid!).toFixed(0)} MB`,
  );
  if (values['trace-gc']) {
    console.log(`   auth since its start: ${gcPauses(auth.stdout())}`);
    console.log(`   seal since its start: ${gcPauses(seal.stdout())}`);
  }
  console.log(`   load average at the end: ${loadAverage()}`);
  for (const goal of goals) printResult(goal);
} finally {
  agent.destroy();
  bareReader.disconnect();
  floorReader.disconnect();
  await auth.stop();
  await sms.close();
  await seal.stop();
  await clusters.stop();
  await keys.close();
  await database.drop();
  await rm(authDir, { recursive: true, force: true });
  await rm(sealDir, { recursive: true, force: true });
}
