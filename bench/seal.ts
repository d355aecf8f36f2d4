// Sealing against the real IPFS Cluster and Kubo (two one-peer clusters on 127.0.0.1, built by
// scripts/build-ipfs.sh): messages/s and p50/p99 of one message from the start of its seal until both
// clusters report it pinned, next to the same calls made by a bare HTTP client in the same run (POST
// /add on the primary, POST /pins on both, GET /pins/{cid} until pinned: the clusters' own ceiling).
// Sealpost's side is the seal service (in this process, PostgreSQL 127.0.0.1) doing POST /v1/seal, and
// then waiting until its follower has recorded both pins held; a message's latency there ends when the
// service recorded the last pin as held (the pin row's `updated_at`), not when this script noticed.
//
// Each concurrency level (messages in flight at once) runs the ceiling, then Sealpost, back to back. The goal
// of each level (docs/design.md, "Performance goals"): ≥ 0.8× the ceiling's messages/s, printed last as a
// RESULT line (support/result.ts).
//
//   node --import tsx bench/seal.ts [--messages 120] [--concurrency 1,4,8] [--size 10240]
import { randomBytes, randomUUID } from 'node:crypto';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { basicAuthorization, startRealClusters, type RealCluster } from '../test/support/ipfs-real.ts';
import { rawMessage, startSealWithClusters } from '../test/support/seal.ts';
import { machineLine, treeCpuMs } from './support/proc.ts';
import { printResult, type Result } from './support/result.ts';
import { percentile } from './support/smtp-load.ts';
import { inFlight } from './support/workers.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '120' },
    concurrency: { type: 'string', default: '1,4,8' },
    size: { type: 'string', default: '10240' },
  },
});
const MESSAGES = Number(values.messages);
const LEVELS = values.concurrency.split(',').map(Number);
const SIZE = Number(values.size);
const POLL_MS = 100;
/**
 * The bare client asks as often as the service does for a fresh pin: the seal service looks at a new
 * seal's pins every 50 ms during their first second (PinFollower.watch), then every POLL_MS. A ceiling
 * polling only every 100 ms would wait longer than the service and flatter it.
 */
const FRESH_POLL_MS = 50;
/** Time from the start of a message until its pins were accepted (bare) or the seal answered (Sealpost). */
const accepted: Record<string, number[]> = { bare: [], sealpost: [] };

const clusters = await startRealClusters();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One HTTP exchange with a cluster's REST API, as any client would make it. */
function call(
  cluster: RealCluster,
  method: string,
  path: string,
  body?: { type: string; data: Buffer },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      authorization: basicAuthorization(cluster),
    };
    if (body) Object.assign(headers, { 'content-type': body.type, 'content-length': String(body.data.length) });
    const options = { host: '127.0.0.1', port: cluster.restPort, method, path, headers, ca: clusters.ca.cert };
    const done = (res: IncomingMessage) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    };
    const req = cluster.secure ? httpsRequest(options, done) : httpRequest(options, done);
    req.on('error', reject);
    req.end(body?.data);
  });
}

async function pinnedOn(cluster: RealCluster, cid: string): Promise<void> {
  const started = performance.now();
  for (;;) {
    const { text } = await call(cluster, 'GET', `/pins/${cid}`);
    const peers = Object.values((JSON.parse(text) as { peer_map: Record<string, { status: string }> }).peer_map ?? {});
    if (peers.length > 0 && peers.every((peer) => peer.status === 'pinned')) return;
    await sleep(performance.now() - started < 1000 ? FRESH_POLL_MS : POLL_MS);
  }
}

/** The ceiling: add on the primary, pin on both, wait until both hold it. */
async function bareOne(): Promise<void> {
  const t = performance.now();
  const boundary = `bench${randomUUID()}`;
  const data = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\n` +
        'Content-Disposition: form-data; name="file"; filename="m.sealed"\r\n' +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    randomBytes(SIZE),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const added = await call(clusters.primary, 'POST', '/add', {
    type: `multipart/form-data; boundary=${boundary}`,
    data,
  });
  const cid = (JSON.parse(added.text.trim().split('\n').at(-1)!) as { cid: string }).cid;
  await Promise.all([clusters.primary, clusters.secondary].map((cluster) => call(cluster, 'POST', `/pins/${cid}`)));
  accepted.bare!.push(performance.now() - t);
  await Promise.all([pinnedOn(clusters.primary, cid), pinnedOn(clusters.secondary, cid)]);
}

async function measure(name: string, concurrency: number, one: () => Promise<number | void>) {
  const latencies: number[] = [];
  const started = performance.now();
  const cpuBefore = { own: process.cpuUsage(), tree: treeCpuMs(process.pid) };
  await inFlight(MESSAGES, concurrency, async () => {
    const t = performance.now();
    const own = await one();
    latencies.push(typeof own === 'number' ? own : performance.now() - t);
  });
  const seconds = (performance.now() - started) / 1000;
  // This process holds the load generator and, on Sealpost's side, the seal service; its children are
  // the Kubo and cluster daemons (PostgreSQL is not counted).
  const own = process.cpuUsage(cpuBefore.own);
  const ownMs = (own.user + own.system) / 1000;
  const daemonsMs = treeCpuMs(process.pid) - cpuBefore.tree - ownMs;
  latencies.sort((a, b) => a - b);
  const figures = { rate: MESSAGES / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  console.log(
    `${name.padEnd(44)} ${figures.rate.toFixed(1).padStart(6)} msg/s   ` +
      `p50 ${figures.p50.toFixed(0).padStart(5)} ms   p99 ${figures.p99.toFixed(0).padStart(5)} ms` +
      `   CPU/msg: this process ${(ownMs / MESSAGES).toFixed(1)} ms, ` +
      `IPFS daemons ${(daemonsMs / MESSAGES).toFixed(1)} ms`,
  );
  return figures;
}

const cluster = (c: RealCluster) => ({
  host: '127.0.0.1',
  port: String(c.restPort),
  user: c.user,
  pass: c.pass,
  secure: c.secure,
});
const seal = await startSealWithClusters([cluster(clusters.primary), cluster(clusters.secondary)], {
  IPFS_CLUSTER_CA_FILE: clusters.ca.certPath,
  IPFS_PROXY_PORT: String(clusters.primary.proxyPort),
  SEAL_PIN_CHECK_INTERVAL: `${POLL_MS}ms`,
  LOG_LEVEL: 'warn',
});

/**
 * Seals in flight, resolved with the time the service recorded the last of their pins as held. The
 * observer is not part of the work measured, so it must cost the machine next to nothing: a trigger that
 * this script adds to the bench's own database notifies (LISTEN/NOTIFY) each time a pin is recorded held,
 * with the seal, the cluster and the time in the payload, and the observer counts the clusters per seal:
 * no query per message. The fourth session polled GET /v1/sealed/{id} every 10 ms per message instead:
 * ~800 requests/s through the service under test, a large part of the CPU it then reported for it.
 */
const CLUSTERS = 2;
const waiting = new Map<string, (heldAt: number) => void>();
const held = new Map<string, { clusters: Set<string>; at: number }>();
const observer = new pg.Client({ connectionString: seal.config.databaseUrl });
await observer.connect();
await observer.query(`
  create function seal.bench_pin_held() returns trigger language plpgsql as $$
  begin
    perform pg_notify('bench_pin_held',
      new.sealed_id::text || ' ' || new.cluster || ' ' || (extract(epoch from new.updated_at) * 1000)::bigint);
    return null;
  end $$;
  create trigger bench_pin_held after insert or update on seal.sealed_pins
    for each row when (new.status = 'pinned') execute function seal.bench_pin_held();
  listen bench_pin_held;`);
observer.on('notification', (note) => {
  const [id, cluster, at] = note.payload!.split(' ') as [string, string, string];
  const seen = held.get(id) ?? { clusters: new Set<string>(), at: 0 };
  seen.clusters.add(cluster);
  seen.at = Math.max(seen.at, Number(at));
  held.set(id, seen);
  if (seen.clusters.size === CLUSTERS) waiting.get(id)?.(seen.at);
});
/** When the seal's pins are all held: at once if they are already. */
function heldAt(id: string): Promise<number> {
  const seen = held.get(id);
  if (seen?.clusters.size === CLUSTERS) return Promise.resolve(seen.at);
  return new Promise((resolve) => waiting.set(id, resolve));
}

/**
 * POST /v1/seal through node:http with a keep-alive agent, the client the bare side uses: the load
 * generator's own cost counts in this process's CPU, so both sides pay the same for theirs.
 */
const sealAgent = new Agent({ keepAlive: true });
function postSealHttp(raw: Buffer): Promise<{ status: number; text: string }> {
  const url = new URL('/v1/seal', seal.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: url.pathname,
        agent: sealAgent,
        headers: {
          authorization: `Bearer ${seal.serviceToken}`,
          'content-type': 'message/rfc822',
          'content-length': String(raw.length),
          'x-sealpost-envelope-id': randomUUID(),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(raw);
  });
}

async function sealOne(): Promise<number> {
  const t = performance.now();
  const wallStart = Date.now();
  const response = await postSealHttp(rawMessage({ body: randomBytes(SIZE).toString('base64').slice(0, SIZE) }));
  if (response.status !== 201) throw new Error(`seal answered ${response.status}: ${response.text}`);
  const { id } = JSON.parse(response.text) as { id: string };
  accepted.sealpost!.push(performance.now() - t);
  return (await heldAt(id)) - wallStart;
}

try {
  console.log(machineLine());
  console.log(
    `seal: ${MESSAGES} messages of ${SIZE} bytes at each level, add + pin until pinned on 2 real clusters ` +
      `(poll ${FRESH_POLL_MS} ms for a second, then ${POLL_MS} ms)`,
  );
  await measure('warm-up (bare client, not counted)', Math.max(...LEVELS), async () => bareOne());
  const p50 = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    ).toFixed(0);
  const ratios: string[] = [];
  const goals: Result[] = [];
  for (const level of LEVELS) {
    console.log(`-- ${level} at a time`);
    accepted.bare = [];
    accepted.sealpost = [];
    // SEAL_BENCH_ONLY=sealpost skips the ceiling, for profiling the service's side alone.
    const bare =
      process.env.SEAL_BENCH_ONLY === 'sealpost'
        ? { rate: NaN, p99: NaN }
        : await measure('bare client -> IPFS Cluster REST (ceiling)', level, bareOne);
    const sealpost = await measure('Sealpost seal service (POST /v1/seal)', level, sealOne);
    console.log(
      `accepted (pins accepted / seal answered), p50: bare ${p50(accepted.bare)} ms, ` +
        `Sealpost ${p50(accepted.sealpost)} ms`,
    );
    const ratio = `${(sealpost.rate / bare.rate).toFixed(2)}x`;
    console.log(
      `ratio: ${ratio} the ceiling's throughput (goal >= 0.8x); p99 ${(sealpost.p99 / bare.p99).toFixed(2)}x`,
    );
    ratios.push(`${level}: ${ratio}`);
    goals.push({
      goal: `seal, ${level} in flight`,
      target: '≥ 0.8× the ceiling',
      unit: 'msg/s',
      figure: sealpost.rate,
      baseline: bare.rate,
      baselineName: 'bare client → IPFS Cluster (the ceiling)',
      ratio: sealpost.rate / bare.rate,
      met: sealpost.rate / bare.rate >= 0.8,
      note: `p99 ${sealpost.p99.toFixed(0)} ms, the ceiling's ${bare.p99.toFixed(0)}`,
    });
  }
  console.log(`ratios by messages in flight: ${ratios.join(', ')} (goal >= 0.8x)`);
  for (const goal of goals) printResult(goal);
} finally {
  observer.removeAllListeners('notification');
  await observer.end();
  sealAgent.destroy();
  await seal.stop();
  await clusters.stop();
}
