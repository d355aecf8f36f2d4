// Durable SMTP ingest: Sealpost's exchange engine (payload stored, envelope row committed, then 250)
// against baselines measured in the same run, on 10 KB messages over 1, 8 and 32 reused connections:
//   - a bare smtp-server that stores nothing (the ceiling for Node.js; the goal is ≥ 0.5× of it);
//   - Postfix receiving into its queue (fsync per message, like us), when installed and run as root;
//   - Postfix's smtp-sink, a C server that discards (the ceiling of the machine), when installed;
//   - the durable floor (support/durable-sink.ts): the bare smtp-server plus the kernel's object store and one
//     committed row per message, the two at the same time: the least any durable intake on this stack
//     does, so its ratio to the bare server bounds Sealpost's, and Sealpost's ratio to it is its own cost.
// Each server runs as its own process; the load comes from nodemailer pools in this process.
//
// Two more figures, each next to its own baseline in the same run:
//   - with --s3, raw PutObject calls of the same 10 KB bodies at the same concurrency from two bare
//     clients, the SDK's and the signed requests the store uses per message; the faster is the S3 ceiling
//     here (what the store takes, with nothing of Sealpost in the way); and the signed client's puts with
//     the keys deleted alongside, in DeleteObjects calls as a delivering exchange sends them (what the
//     store takes when each message also costs it a deletion: the ceiling of intake with delivery);
//   - intake with delivery running in the same process (to Postfix's smtp-sink), next to intake alone,
//     and the delivery queue left when the load stops (whether delivery keeps up while intake runs).
//
//   node --import tsx bench/ingest.ts [--s3] [--messages 2000] [--connections 1,8,32] [--warm-up 500]
//                                     [--rounds 1] [--profile DIR]
//     --s3           store payloads in a real S3 server (OpenStack Swift, started here) instead of local disk.
//     --connections  the levels to run, comma-separated.
//     --warm-up      messages each server takes before each level's first round, not counted (connections, JIT).
//     --rounds N     measures each level N times, every server (and the raw puts) once per round, in turns; the
//                    summary gives each ratio's median over the rounds and their range. The host's speed drifts
//                    within minutes, and a ratio of two runs a minute apart carries that drift; in turns, each
//                    round's ratio is of runs seconds apart, and the median keeps one slow moment from deciding.
//     --profile DIR  profiles the two exchange processes (intake alone: exchange.cpuprofile; with delivery:
//                    exchange-delivering.cpuprofile) and the durable floor (floor.cpuprofile), written to DIR
//                    when they stop.
// The goal of each level (docs/design.md, "Performance goals"): Sealpost ≥ 0.9× the durable floor's
// messages/s, printed last as a RESULT line (support/result.ts) with the baseline beside it: the bare
// smtp-server on local disk, raw PutObject on S3.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createTestDatabase } from '../test/support/postgres.ts';
import { freePort } from '../test/support/ports.ts';
import { startSealpostProcess } from '../test/support/sealpost-process.ts';
import { s3Env, startS3Server, uniqueBucket } from '../test/support/s3-server.ts';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import pg from 'pg';
import { DELETE_MANY_MAX, type ObjectStore } from '../src/kernel/objects/index.ts';
import { createS3ObjectStore } from '../src/kernel/objects/s3.ts';
import { DELETION_HOLD_MAX_MS } from '../src/exchange/delivery/retention.ts';
import { createSignedS3 } from '../src/kernel/objects/s3-requests.ts';
import { stopOnExit } from './support/cleanup.ts';
import { postfixUnavailable, startPrivatePostfix, type PrivatePostfix } from './support/postfix.ts';
import {
  cpuProfileArgs,
  loadAverage,
  machineLine,
  parentPid,
  peakRssMb,
  treeCpuMs,
  treeCpuTimes,
} from './support/proc.ts';
import { printResult, type Result } from './support/result.ts';
import { median, percentile, runSmtpLoad, type LoadResult } from './support/smtp-load.ts';
import { inFlight } from './support/workers.ts';

const { values } = parseArgs({
  options: {
    s3: { type: 'boolean', default: false },
    messages: { type: 'string', default: '2000' },
    connections: { type: 'string', default: '1,8,32' },
    profile: { type: 'string' },
    'warm-up': { type: 'string', default: '500' },
    rounds: { type: 'string', default: '1' },
  },
});
const ROUNDS = Number(values.rounds);
const MESSAGES = Number(values.messages);
const WARM_UP = Number(values['warm-up']);
const CONNECTIONS = values.connections.split(',').map(Number);
const SMTP_SINK = ['/usr/sbin/smtp-sink', '/usr/lib/postfix/sbin/smtp-sink'].find((path) => existsSync(path));

interface Server {
  name: string;
  port: number;
  /** Root of the server's process tree, for its CPU time. */
  pid: number;
}

/**
 * Cost per message: CPU in ms (the server's process tree, its kernel part, and PostgreSQL's), and the bytes of
 * write-ahead log PostgreSQL wrote (what its commits flush, whoever wrote it).
 */
interface CpuPerMessage {
  total: number;
  kernel: number;
  database: number;
  walBytes: number;
}

/** Throughput and latency of a run, with the server's CPU when it is one of ours to measure. */
const fmt = (r: LoadResult, cpu?: CpuPerMessage) => {
  const latency = `p50 ${r.p50ms.toFixed(1).padStart(6)} ms  p99 ${r.p99ms.toFixed(1).padStart(6)} ms`;
  const failed = r.failed ? `  (${r.failed} FAILED)` : '';
  const server = cpu ? `  server CPU ${cpu.total.toFixed(2)} ms/msg (kernel ${cpu.kernel.toFixed(2)})` : '';
  const database = cpu ? `, PostgreSQL ${cpu.database.toFixed(2)} (WAL ${cpu.walBytes.toFixed(0)} B)` : '';
  return `${r.perSecond.toFixed(0).padStart(6)} msg/s  ${latency}${server}${database}${failed}`;
};

/** One measured run; with `warmUp`, after that many messages not counted (connections, JIT) and `afterWarmUp`. */
async function measure(
  server: Server,
  connections: number,
  count: number,
  warmUp: number,
  afterWarmUp?: () => Promise<void>,
): Promise<{ result: LoadResult; cpu: CpuPerMessage }> {
  if (warmUp > 0) {
    await runSmtpLoad(server.port, connections, warmUp);
    await afterWarmUp?.();
  }
  const before = { server: treeCpuTimes(server.pid), database: treeCpuMs(postmaster), wal: await walPosition() };
  const result = await runSmtpLoad(server.port, connections, count);
  const after = { server: treeCpuTimes(server.pid), database: treeCpuMs(postmaster), wal: await walPosition() };
  return {
    result,
    cpu: {
      total: (after.server.total - before.server.total) / count,
      kernel: (after.server.kernel - before.server.kernel) / count,
      database: (after.database - before.database) / count,
      walBytes: (after.wal - before.wal) / count,
    },
  };
}

const database = await createTestDatabase('bench_ingest');
const s3 = values.s3 ? await startS3Server() : undefined;
const bucket = s3 ? uniqueBucket('bench') : undefined;
const bareStore = s3 ? createS3ObjectStore({ ...s3, bucket: bucket! }) : undefined;
await bareStore?.ensureBucket();

const children: ChildProcess[] = [];
async function startChild(
  command: string,
  args: string[],
  ready: 'stdout' | number,
  env?: Record<string, string>,
): Promise<ChildProcess> {
  const child = stopOnExit(
    spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'], env: env && { ...process.env, ...env } }),
  );
  children.push(child);
  if (ready === 'stdout') await once(child.stdout!, 'data');
  else await waitForPort(ready);
  return child;
}
async function waitForPort(port: number): Promise<void> {
  const { connect } = await import('node:net');
  for (let i = 0; i < 200; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nothing listens on ${port}`);
}
/** One of bench/support's servers, on `port`, ready when it prints its first line. */
function startSupportServer(
  script: string,
  port: number,
  env?: Record<string, string>,
  profile?: string,
): Promise<ChildProcess> {
  const path = fileURLToPath(new URL(`./support/${script}`, import.meta.url));
  const args = [
    ...cpuProfileArgs(profile ? values.profile : undefined, profile),
    '--import',
    'tsx',
    path,
    String(port),
  ];
  return startChild(process.execPath, args, 'stdout', env);
}

const barePort = await freePort();
const bare = await startSupportServer('bare-sink.ts', barePort);

// The durable floor: the bare server plus the kernel's object store and one committed row per message, on
// its own database and folder (or bucket), configured as the run's Sealpost is.
const durablePort = await freePort();
const durableDatabase = await createTestDatabase('bench_ingest_durable');
const durableDir = await mkdtemp(join(tmpdir(), 'bench-durable-'));
const durable = await startSupportServer(
  'durable-sink.ts',
  durablePort,
  {
    DATABASE_URL: durableDatabase.url,
    SEALPOST_DATA_DIR: durableDir,
    ...(s3 ? s3Env(s3, bucket!) : {}),
  },
  'floor',
);

let cSink: Server | undefined;
if (SMTP_SINK) {
  const port = await freePort();
  // -u nobody: it refuses to run as root otherwise; backlog 256.
  const child = await startChild(
    SMTP_SINK,
    [...(process.getuid?.() === 0 ? ['-u', 'nobody'] : []), `127.0.0.1:${port}`, '256'],
    port,
  );
  cSink = { name: 'smtp-sink (C)', port, pid: child.pid! };
}

let postfix: PrivatePostfix | undefined;
const noPostfix = postfixUnavailable();
if (!noPostfix) postfix = await startPrivatePostfix(await freePort());

/** An exchange process on its own database; with `relayPort`, delivering to it while it takes mail in. */
async function startExchange(databaseUrl: string, relayPort?: number) {
  const name = relayPort ? 'exchange-delivering' : 'exchange';
  const exchange = await startSealpostProcess(
    {
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN: 'bench-admin',
      SERVICE_TOKEN: 'bench-service',
      // Without a relay: ingest only, no delivery competing for the CPU.
      ...(relayPort ? { OUTBOUND_SMTP_URL: `smtp://127.0.0.1:${relayPort}` } : { DELIVERY_ENABLED: 'false' }),
      SMTP_MAX_CONNECTIONS: '1000',
      LOG_LEVEL: 'info',
      ...(s3 ? s3Env(s3, bucket!) : {}),
    },
    { which: 'exchange', nodeArgs: cpuProfileArgs(values.profile, name) },
  );
  stopOnExit(exchange.child);
  const rule = await fetch(`${exchange.urls.exchange}/v1/config`, {
    method: 'POST',
    headers: { authorization: 'Bearer bench-admin', 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'bench',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    }),
  });
  if (rule.status !== 201) throw new Error(`rule: ${rule.status} ${await rule.text()}`);
  return exchange;
}
const sealpost = await startExchange(database.url);
// The delivering exchange needs a relay that takes everything: Postfix's smtp-sink, else the bare sink.
const deliveryDatabase = await createTestDatabase('bench_ingest_delivery');
const delivering = await startExchange(deliveryDatabase.url, cSink?.port ?? barePort);
const queueDb = new pg.Client({ connectionString: deliveryDatabase.url });
await queueDb.connect();
/**
 * PostgreSQL's postmaster, whose process tree (backends, the WAL writer, the checkpointer) is charged per
 * message beside the server's own CPU: the database shares the cores with everything else here.
 */
const postmaster = parentPid((await queueDb.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid)!;
/** Where PostgreSQL's write-ahead log ends, in bytes from its start (for the WAL each message costs). */
async function walPosition(): Promise<number> {
  const { rows } = await queueDb.query<{ at: string }>(
    "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') as at",
  );
  return Number(rows[0]!.at);
}

/** Envelopes the delivering exchange has accepted and not yet finished with. */
async function queued(): Promise<number> {
  const { rows } = await queueDb.query<{ count: string }>(
    "select count(*) from exchange.envelopes where status not in ('delivered', 'failed', 'bounced')",
  );
  return Number(rows[0]!.count);
}

/** Envelope rows of the delivering exchange: a row goes once its payload is deleted. */
async function envelopes(): Promise<number> {
  const { rows } = await queueDb.query<{ count: string }>('select count(*) from exchange.envelopes');
  return Number(rows[0]!.count);
}

/** Waits (up to a minute) until the delivering exchange has no envelope left, clean-ups included. */
async function caughtUp(): Promise<void> {
  for (let i = 0; i < 600 && (await envelopes()) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** A bare client's PutObject of one body under a key; close() frees its sockets. */
interface BarePut {
  put(key: string, body: Buffer): Promise<unknown>;
  close(): void;
}

/**
 * The two bare clients the S3 ceiling is measured with, set up as the kernel's object store sets up its
 * own (same endpoint, path style, checksum policy): the SDK's S3Client, and the signed requests (aws4 on
 * keep-alive sockets) the store uses for its per-message calls. The ceiling is the faster of the two.
 */
const BARE_CLIENTS: Record<string, () => BarePut> = {
  'bare SDK client': () => {
    const client = new S3Client({
      endpoint: s3!.endpoint,
      region: s3!.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3!.accessKeyId, secretAccessKey: s3!.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    return {
      put: (key, body) => client.send(new PutObjectCommand({ Bucket: bucket!, Key: key, Body: body })),
      close: () => client.destroy(),
    };
  },
  'bare signed client': () => {
    const credentials = { accessKeyId: s3!.accessKeyId, secretAccessKey: s3!.secretAccessKey };
    const client = createSignedS3({
      bucketUrl: new URL(`${s3!.endpoint}/${bucket!}`),
      region: s3!.region,
      credentials: async () => credentials,
    });
    return { put: (key, body) => client.put(key, body, undefined), close: () => client.close() };
  },
};

/**
 * PutObject of a 10 KB body per message, `connections` calls at a time, from one bare client. With `deleting`,
 * the keys put are deleted alongside as a delivering exchange asks the store to while its intake is busy:
 * up to 1,000 keys or DELETION_HOLD_MAX_MS at a time, whichever comes first, handed to deleteMany (which
 * sends them in DeleteObjects calls of 100 keys, src/kernel/objects/s3.ts).
 */
async function rawPuts(
  clientName: string,
  connections: number,
  count: number,
  deleting?: ObjectStore,
): Promise<LoadResult> {
  const client = BARE_CLIENTS[clientName]!();
  const body = Buffer.alloc(10 * 1024, 'x');
  for (let i = 0; i < Math.min(20, count); i++) await client.put(`warm/${i}`, body);
  const latencies: number[] = [];
  let failed = 0;
  const put: string[] = [];
  const deletions: Array<Promise<void>> = [];
  // A DeleteObjects call that times out (Swift under load) is the store's answer, not the benchmark's end:
  // counted and said, so that the run still gives its figures.
  let failedDeletions = 0;
  const deleteNow = () => {
    if (put.length > 0)
      deletions.push(
        deleting!.deleteMany(put.splice(0)).catch(() => {
          failedDeletions++;
        }),
      );
  };
  const deleteTimer = deleting ? setInterval(deleteNow, DELETION_HOLD_MAX_MS) : undefined;
  const started = performance.now();
  await inFlight(count, connections, async (i) => {
    const key = `raw/${connections}/${i}`;
    const t = performance.now();
    await client.put(key, body).catch(() => failed++);
    latencies.push(performance.now() - t);
    if (deleting && put.push(key) >= DELETE_MANY_MAX) deleteNow();
  });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(deleteTimer);
  deleteNow();
  await Promise.all(deletions);
  if (failedDeletions > 0) console.log(`   ${clientName}: ${failedDeletions} DeleteObjects calls failed`);
  client.close();
  latencies.sort((a, b) => a - b);
  return {
    messages: count,
    seconds,
    perSecond: (count - failed) / seconds,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    failed,
  };
}

const servers: Server[] = [
  { name: 'bare smtp-server', port: barePort, pid: bare.pid! },
  ...(cSink ? [cSink] : []),
  { name: 'durable floor', port: durablePort, pid: durable.pid! },
  ...(postfix ? [{ name: 'Postfix → queue', port: postfix.port, pid: postfix.masterPid }] : []),
  { name: 'sealpost', port: sealpost.ports.smtp, pid: sealpost.child.pid! },
  { name: 'sealpost+delivery', port: delivering.ports.smtp, pid: delivering.child.pid! },
];

console.log(`== SMTP ingest: 10 KB messages, ${MESSAGES} per run (500 with 1 connection)`);
console.log(`   ${machineLine()}`);
const payloadStore = s3 ? 'S3 (Swift)' : 'local disk (fsync of file and folder)';
console.log(`   Sealpost: payloads on ${payloadStore}, envelopes in PostgreSQL 127.0.0.1, LOG_LEVEL info`);
if (noPostfix) console.log(`   Postfix baseline skipped: ${noPostfix}`);
if (!SMTP_SINK) console.log("   smtp-sink baseline skipped: Postfix's smtp-sink is not installed");
const summary: string[] = [];
const goals: Result[] = [];
/**
 * One round of one level: Sealpost's ratios, each a quotient of two runs of that round, and the floor's to
 * the same baselines; and the CPU per message of Sealpost's exchange and of the floor (ms).
 */
interface RoundFigures {
  /** Messages/s: Sealpost's, its baseline's (the bare smtp-server, or raw PutObject on S3), the floor's. */
  ours: number;
  baseline: number;
  floorRate: number;
  bare: number;
  floor: number;
  floorToBare: number;
  postfix?: number;
  floorToPostfix?: number;
  rawPut?: number;
  floorToRawPut?: number;
  withDelivery: number;
  storeWithDeletes?: number;
  cpu: number;
  floorCpu: number;
}

/**
 * One round of one level: the raw puts (S3), then each server; its figures. Only the first round of a level
 * warms the servers up: the later ones find them warm, their connections opened before the clock starts.
 */
async function round(connections: number, count: number, first: boolean): Promise<RoundFigures> {
  const results = new Map<string, LoadResult>();
  const cpus = new Map<string, CpuPerMessage>();
  if (s3) {
    for (const clientName of Object.keys(BARE_CLIENTS)) {
      const result = await rawPuts(clientName, connections, count);
      const best = results.get('raw PutObject');
      if (!best || result.perSecond > best.perSecond) results.set('raw PutObject', result);
      results.set(clientName, result);
      const figures = `${fmt(result)}  (${clientName})`;
      console.log(`${String(connections).padStart(2)} conn  ${'raw PutObject'.padEnd(17)} ${figures}`);
    }
    // What the store can take when each message costs it a deletion too: the ceiling of intake with delivery.
    const withDeletes = await rawPuts('bare signed client', connections, count, bareStore);
    results.set('raw PutObject + deletes', withDeletes);
    const figures = `${fmt(withDeletes)}  (bare signed client, the keys deleted alongside)`;
    console.log(`${String(connections).padStart(2)} conn  ${'raw Put + Delete'.padEnd(17)} ${figures}`);
  }
  for (const server of servers) {
    const delivering = server.name === 'sealpost+delivery';
    // The delivering exchange starts each measured run with the warm-up's messages delivered.
    const warmUp = first ? Math.min(WARM_UP, count) : 0;
    const { result, cpu } = await measure(server, connections, count, warmUp, delivering ? caughtUp : undefined);
    results.set(server.name, result);
    cpus.set(server.name, cpu);
    const left = delivering ? `  queue left ${await queued()}` : '';
    console.log(`${String(connections).padStart(2)} conn  ${server.name.padEnd(17)} ${fmt(result, cpu)}${left}`);
    // The next run starts with delivery caught up, its clean-ups included (payload deletes and row
    // removals may trail the `delivered` status, and they load the same store), so that each run
    // measures its own load.
    if (delivering) await caughtUp();
  }
  const rate = (name: string) => results.get(name)!.perSecond;
  const ours = rate('sealpost');
  return {
    ours,
    baseline: rate(s3 ? 'raw PutObject' : 'bare smtp-server'),
    floorRate: rate('durable floor'),
    bare: ours / rate('bare smtp-server'),
    floor: ours / rate('durable floor'),
    floorToBare: rate('durable floor') / rate('bare smtp-server'),
    postfix: postfix ? ours / rate('Postfix → queue') : undefined,
    floorToPostfix: postfix ? rate('durable floor') / rate('Postfix → queue') : undefined,
    rawPut: s3 ? ours / rate('raw PutObject') : undefined,
    floorToRawPut: s3 ? rate('durable floor') / rate('raw PutObject') : undefined,
    withDelivery: rate('sealpost+delivery') / ours,
    storeWithDeletes: s3 ? rate('raw PutObject + deletes') / rate('bare signed client') : undefined,
    cpu: cpus.get('sealpost')!.total,
    floorCpu: cpus.get('durable floor')!.total,
  };
}

/** A figure over the rounds: the median, with the range when there are several. */
function overRounds(rounds: RoundFigures[], key: keyof RoundFigures, unit = '×'): string {
  const values = rounds.map((r) => r[key]!).sort((a, b) => a - b);
  const range = values.length > 1 ? ` (${values[0]!.toFixed(2)}–${values.at(-1)!.toFixed(2)})` : '';
  return `${median(values).toFixed(2)}${unit}${range}`;
}

for (const connections of CONNECTIONS) {
  const count = connections === 1 ? Math.min(MESSAGES, 500) : MESSAGES;
  const rounds: RoundFigures[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    if (ROUNDS > 1) console.log(`-- ${connections} conn, round ${r} of ${ROUNDS}`);
    rounds.push(await round(connections, count, r === 1));
  }
  const of = (key: keyof RoundFigures) => overRounds(rounds, key);
  const ms = (key: keyof RoundFigures) => overRounds(rounds, key, ' ms');
  const overWhat = ROUNDS > 1 ? `, medians of ${ROUNDS} rounds (range)` : '';
  const line =
    `${String(connections).padStart(2)} conn  sealpost = ${of('bare')} the bare smtp-server, ` +
    `${of('floor')} the durable floor (itself ${of('floorToBare')} the bare one)` +
    (postfix ? `, ${of('postfix')} Postfix (the floor ${of('floorToPostfix')})` : '') +
    (s3 ? `, ${of('rawPut')} raw PutObject (the floor ${of('floorToRawPut')})` : '') +
    `; exchange CPU ${ms('cpu')} per message (the floor ${ms('floorCpu')})` +
    `; with delivery running ${of('withDelivery')} intake alone` +
    (s3 ? ` (the store's own: puts with deletes ${of('storeWithDeletes')} puts alone)` : '') +
    overWhat;
  console.log(line);
  summary.push(line);
  const middle = (key: keyof RoundFigures) => median(rounds.map((r) => r[key]!));
  const floorRatio = middle('floor');
  const ratios = rounds.map((r) => r.floor).sort((a, b) => a - b);
  goals.push({
    goal: `ingest, ${s3 ? 'S3' : 'local disk'}, ${connections} connection${connections === 1 ? '' : 's'}`,
    target: '≥ 0.9× the floor',
    unit: 'msg/s',
    figure: middle('ours'),
    baseline: middle('baseline'),
    baselineName: s3 ? 'raw PutObject' : 'bare smtp-server',
    floor: middle('floorRate'),
    floorName: 'durable floor',
    ratio: floorRatio,
    met: floorRatio >= 0.9,
    note:
      (ROUNDS > 1 ? `${ROUNDS} rounds, ${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)}×; ` : '') +
      `CPU ${middle('cpu').toFixed(2)} ms/msg`,
  });
}
if (postfix) console.log(`Postfix queued ${await postfix.queued()} messages (its maillog)`);
console.log(
  `peak RSS: sealpost exchange ${peakRssMb(sealpost.child.pid!).toFixed(0)} MB, ` +
    `bare smtp-server ${peakRssMb(bare.pid!).toFixed(0)} MB`,
);
console.log(summary.join('\n'));
console.log(`   load average at the end: ${loadAverage()}`);
for (const goal of goals) printResult(goal);

for (const child of children) child.kill('SIGTERM');
await postfix?.stop();
await sealpost.stop();
await delivering.stop();
await queueDb.end();
await s3?.stop();
await database.drop();
await deliveryDatabase.drop();
await durableDatabase.drop();
await rm(durableDir, { recursive: true, force: true });
