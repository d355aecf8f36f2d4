// Delivery: accepted → delivered through SMTP into a sink on 127.0.0.1, against the real PostgreSQL and
// local-disk objects, with 1 and 2 engine processes (`sealpost start exchange`), next to a baseline in
// the same run: nodemailer's pooled transport pushing the same messages straight to the same sink (no
// queue, no database, no object store). The goal: one engine ≥ 1,500 messages/s (its CPU per message is
// printed beside it), printed last as a RESULT line (support/result.ts).
//
//   node --import tsx bench/delivery.ts [--messages 3000] [--size 10240] [--concurrency 32] [--rate 100]
//                                       [--sink c|node] [--engines 1,2] [--latency-messages 500]
//                                       [--warm-up 1000] [--cpu-prof DIR]
//
// The sink: Postfix's smtp-sink (C, discards; default when installed) so that the sink is not what is
// measured, or an smtp-server sink in this process (`--sink node`) that keeps every message and lets the
// run check that each Message-ID arrived exactly once. With the C sink, arrival is read from the status
// history: every envelope `delivered` exactly once.
//
// Throughput: the messages are accepted first (MessageIntake) and held back (next_attempt_at in the
// future) while the engines start; releasing them all at once starts the clock, the last `delivered`
// stops it. Each side first sends --warm-up messages that are not counted (the baseline through its own
// pool, the engines a round of their own), so the figures are those of a running engine rather than of
// its first seconds, spent compiling: an engine in service runs warm. The warm-up round's own figure is
// printed too. Latency: messages sent over SMTP to one running engine at a steady --rate, from the 250 to
// the arrival at an smtp-server sink; once with the default DELIVERY_POLL_INTERVAL (1s) and once with
// 100ms: mail an engine takes itself is claimed at once, so the poll interval should not show.
//
// --cpu-prof DIR runs every engine process with `node --cpu-prof` into DIR (a .cpuprofile per process,
// written when it stops); --engines 1 and --latency-messages 0 keep a profiling run to one engine.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql, type Kysely } from 'kysely';
import nodemailer from 'nodemailer';
import { EXCHANGE_VARIABLES } from '../src/exchange/config.ts';
import { migrateSchema, openDatabase } from '../src/kernel/db/index.ts';
import { createLocalObjectStore } from '../src/kernel/objects/index.ts';
import { migrations } from '../src/exchange/migrations/index.ts';
import { RuleStore } from '../src/exchange/rules/store.ts';
import type { ExchangeTables } from '../src/exchange/tables.ts';
import { intakeOn } from '../test/support/exchange-delivery.ts';
import { freePort } from '../test/support/ports.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { startSealpostProcess, type SealpostProcess } from '../test/support/sealpost-process.ts';
import { startSmtpSink, type SmtpSink } from '../test/support/smtp-sink.ts';
import { stopOnExit } from './support/cleanup.ts';
import { cpuProfileArgs, loadAverage, machineLine, peakRssMb, treeCpuMs } from './support/proc.ts';
import { inFlight } from './support/workers.ts';
import { printResult } from './support/result.ts';

const SMTP_SINK = ['/usr/sbin/smtp-sink', '/usr/lib/postfix/sbin/smtp-sink'].find((path) => existsSync(path));
const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '3000' },
    size: { type: 'string', default: '10240' },
    // The product's default unless given.
    concurrency: { type: 'string', default: EXCHANGE_VARIABLES.delivery.concurrency.default },
    rate: { type: 'string', default: '100' },
    'latency-messages': { type: 'string', default: '500' },
    sink: { type: 'string', default: SMTP_SINK ? 'c' : 'node' },
    engines: { type: 'string', default: '1,2' },
    'warm-up': { type: 'string', default: '1000' },
    'cpu-prof': { type: 'string' },
  },
});
const MESSAGES = Number(values.messages);
const SIZE = Number(values.size);
const CONCURRENCY = Number(values.concurrency);
const RATE = Number(values.rate);
const LATENCY_MESSAGES = Number(values['latency-messages']);
const C_SINK = values.sink === 'c';
const ENGINES = values.engines.split(',').map(Number);
const WARM_UP = Number(values['warm-up']);
const CPU_PROF = values['cpu-prof'];
if (C_SINK && !SMTP_SINK) throw new Error("--sink c needs Postfix's smtp-sink");

function message(tag: string, i: number): { messageId: string; raw: Buffer } {
  const messageId = `<${tag}-${i}@bench.example>`;
  const headers = [
    'From: bench@sender.example',
    'To: sink@rcpt.example',
    `Subject: bench ${tag} ${i}`,
    `Message-ID: ${messageId}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain',
  ];
  const head = `${headers.join('\r\n')}\r\n\r\n`;
  const line = 'The quick brown fox jumps over the lazy dog, again and again and again.\r\n';
  return {
    messageId,
    raw: Buffer.from(head + line.repeat(Math.max(1, Math.ceil((SIZE - head.length) / line.length)))).subarray(
      0,
      Math.max(SIZE, head.length + 2),
    ),
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const database = await createTestDatabase('bench_delivery');
const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-bench-delivery-'));
const setup = await openDatabase({ url: database.url, poolSize: 16 });
await migrateSchema(setup.db, { schema: 'exchange', migrations });
const db = setup.db.withSchema('exchange') as Kysely<ExchangeTables>;
const objects = createLocalObjectStore({ dir: join(dataDir, 'objects') });
await new RuleStore(db).create({
  name: 'bench',
  priority: 1,
  configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
});
const intake = intakeOn(db, objects);

// --- The sink -------------------------------------------------------------------------------------
let nodeSink: SmtpSink | undefined;
let sinkUrl: string;
let sinkPid = process.pid;
let cSinkProcess: ReturnType<typeof spawn> | undefined;
if (C_SINK) {
  const port = await freePort();
  const child = stopOnExit(
    spawn(SMTP_SINK!, [...(process.getuid?.() === 0 ? ['-u', 'nobody'] : []), `127.0.0.1:${port}`, '256'], {
      stdio: 'ignore',
    }),
  );
  for (let up = false; !up; await sleep(20)) {
    up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  }
  sinkUrl = `smtp://127.0.0.1:${port}`;
  sinkPid = child.pid!;
  cSinkProcess = child;
} else {
  nodeSink = await startSmtpSink();
  sinkUrl = nodeSink.url;
}

const count = async (table: 'envelopes' | 'delivered') =>
  Number(
    (table === 'envelopes'
      ? await db
          .selectFrom('envelopes')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      : await db
          .selectFrom('message_status')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('status', '=', 'delivered')
          .executeTakeFirstOrThrow()
    ).n,
  );

async function startEngines(engines: number, pollInterval: string, relay = sinkUrl): Promise<SealpostProcess[]> {
  return Promise.all(
    Array.from({ length: engines }, async () => {
      const engine = await startSealpostProcess(
        {
          NODE_ENV: 'production',
          LOG_LEVEL: 'warn',
          DATABASE_URL: database.url,
          DATABASE_POOL_SIZE: '10',
          SEALPOST_DATA_DIR: dataDir,
          ADMIN_TOKEN: 'bench-admin',
          SERVICE_TOKEN: 'bench-service',
          OUTBOUND_SMTP_URL: relay,
          DELIVERY_CONCURRENCY: String(CONCURRENCY),
          DELIVERY_POLL_INTERVAL: pollInterval,
        },
        { which: 'exchange', nodeArgs: cpuProfileArgs(CPU_PROF) },
      );
      stopOnExit(engine.child);
      return engine;
    }),
  );
}

async function acceptAll(tag: string, messages = MESSAGES): Promise<void> {
  await inFlight(messages, 32, (i) =>
    intake.accept({
      channel: 'smtp',
      sender: 'bench@sender.example',
      recipients: ['sink@rcpt.example'],
      payload: message(tag, i).raw,
    }),
  );
}

console.log(
  `== Delivery: accepted → delivered over SMTP, ${MESSAGES} × ${SIZE} B, ` +
    `DELIVERY_CONCURRENCY ${CONCURRENCY} per engine`,
);
console.log(`   ${machineLine()}`);
const sinkKind = C_SINK ? "Postfix's smtp-sink (C, discards)" : 'smtp-server in the bench process (keeps messages)';
console.log(`   sink: ${sinkKind}; payloads on local disk; PostgreSQL 127.0.0.1`);

// --- Baseline: nodemailer straight to the sink --------------------------------------------------
const transporter = nodemailer.createTransport({ url: sinkUrl, pool: true, maxConnections: CONCURRENCY });
let baselinePerSecond: number;
const sendDirect = (tag: string, messages: number) =>
  inFlight(messages, CONCURRENCY * 2, (i) =>
    transporter.sendMail({
      envelope: { from: 'bench@sender.example', to: ['sink@rcpt.example'] },
      raw: message(tag, i).raw,
    }),
  );
{
  await sendDirect('baseline-warm-up', WARM_UP);
  if (nodeSink) nodeSink.messages.length = 0;
  const sinkCpu = treeCpuMs(sinkPid);
  const started = Date.now();
  await sendDirect('baseline', MESSAGES);
  const seconds = (Date.now() - started) / 1000;
  transporter.close();
  baselinePerSecond = MESSAGES / seconds;
  const sinkNote = C_SINK ? `, sink CPU ${((treeCpuMs(sinkPid) - sinkCpu) / MESSAGES).toFixed(2)} ms/msg` : '';
  console.log(
    `baseline  nodemailer pool → sink       ${baselinePerSecond.toFixed(0).padStart(6)} msg/s  ` +
      `(${CONCURRENCY} connections${sinkNote})`,
  );
}
if (nodeSink) {
  if (nodeSink.messages.length !== MESSAGES)
    throw new Error(`baseline: ${nodeSink.messages.length} of ${MESSAGES} messages arrived`);
  nodeSink.messages.length = 0;
}

/**
 * Releases the `messages` oldest held envelopes to the running engines and waits until they are delivered
 * (at the smtp-server sink, or by their status) and cleaned up (payload and row deletes may trail the
 * deliveries; their CPU is part of each message's). Returns the seconds to the last delivery and to the end
 * of the clean-ups, and the engines' CPU per message.
 */
async function deliveryRound(processes: SealpostProcess[], messages: number) {
  const deliveredBefore = await count('delivered');
  const envelopesAfter = (await count('envelopes')) - messages;
  if (nodeSink) nodeSink.messages.length = 0;
  const cpuBefore = processes.map((p) => treeCpuMs(p.child.pid!));
  const started = Date.now();
  await db
    .updateTable('envelopes')
    .set({ next_attempt_at: sql<Date>`now()` })
    .where('id', 'in', (eb) => eb.selectFrom('envelopes').select('id').orderBy('created_at').limit(messages))
    .execute();
  await until(
    async () =>
      nodeSink ? nodeSink.messages.length >= messages : (await count('delivered')) - deliveredBefore >= messages,
    `${messages} messages delivered`,
  );
  const seconds = (Date.now() - started) / 1000;
  await until(async () => (await count('envelopes')) === envelopesAfter, 'clean-up of the delivered envelopes');
  return {
    seconds,
    cleanedAfter: (Date.now() - started) / 1000,
    cpu: processes.reduce((sum, p, i) => sum + treeCpuMs(p.child.pid!) - cpuBefore[i]!, 0) / messages,
  };
}

// --- Throughput with 1 and 2 engine processes ------------------------------------------------------
const throughput: Array<{ engines: number; perSecond: number; cpu: number }> = [];
for (const engines of ENGINES) {
  // The warm-up round's messages first, then the measured ones, all held back until every engine is up.
  await acceptAll(`warm-up${engines}`, WARM_UP);
  await acceptAll(`drain${engines}`);
  await db.updateTable('envelopes').set({ next_attempt_at: sql<Date>`now() + interval '1 day'` }).execute();
  const processes = await startEngines(engines, '100ms');
  if (WARM_UP > 0) {
    const warm = await deliveryRound(processes, WARM_UP);
    console.log(
      `warm-up   ${engines} engine process${engines > 1 ? 'es' : '  '} → sink  ` +
        `${(WARM_UP / warm.seconds).toFixed(0).padStart(6)} msg/s  ` +
        `(engine CPU ${warm.cpu.toFixed(2)} ms/msg, a fresh process's first ${WARM_UP}; not counted)`,
    );
  }
  const { seconds, cleanedAfter, cpu } = await deliveryRound(processes, MESSAGES);
  const rssMb = processes.map((p) => peakRssMb(p.child.pid!));
  await Promise.all(processes.map((p) => p.stop()));
  // Exactly once: at the sink by Message-ID (node sink), or one `delivered` row per envelope.
  if (nodeSink) {
    const unique = new Set(nodeSink.messages.map((m) => m.messageId)).size;
    if (unique !== MESSAGES || nodeSink.messages.length !== MESSAGES)
      throw new Error(`expected ${MESSAGES} distinct messages, got ${nodeSink.messages.length} (${unique} distinct)`);
  } else {
    const twice = await db
      .selectFrom('message_status')
      .select('envelope_id')
      .where('status', '=', 'delivered')
      .groupBy('envelope_id')
      .having((eb) => eb.fn.countAll(), '>', 1)
      .execute();
    if (twice.length > 0) throw new Error(`${twice.length} envelopes were delivered more than once`);
  }
  const perSecond = MESSAGES / seconds;
  throughput.push({ engines, perSecond, cpu });
  console.log(
    `sealpost  ${engines} engine process${engines > 1 ? 'es' : '  '} → sink  ` +
      `${perSecond.toFixed(0).padStart(6)} msg/s  ` +
      `(engine CPU ${cpu.toFixed(2)} ms/msg, clean-ups included, done ${cleanedAfter.toFixed(1)} s after the start` +
      ` of ${seconds.toFixed(1)}; peak RSS ${rssMb.map((r) => `${r.toFixed(0)} MB`).join(' + ')})`,
  );
}

// --- Latency at a steady rate, one engine ----------------------------------------------------------
// Always into the smtp-server sink, which timestamps each arrival.
const latencySink = nodeSink ?? (await startSmtpSink());
for (const pollInterval of LATENCY_MESSAGES > 0 ? ['1s', '100ms'] : []) {
  const [engine] = await startEngines(1, pollInterval, latencySink.url);
  // Over the engine's own SMTP port, as mail arrives: the engine claims what it takes at once.
  const sender = nodemailer.createTransport({
    host: '127.0.0.1',
    port: engine!.ports.smtp,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: 4,
  });
  latencySink.messages.length = 0;
  const acceptedAt = new Map<string, number>();
  const started = Date.now();
  const inFlight: Array<Promise<unknown>> = [];
  for (let i = 0; i < LATENCY_MESSAGES; i++) {
    const due = started + (i * 1000) / RATE;
    if (due > Date.now()) await sleep(due - Date.now());
    const { messageId, raw } = message(`latency-${pollInterval}`, i);
    inFlight.push(
      sender
        .sendMail({ envelope: { from: 'bench@sender.example', to: ['sink@rcpt.example'] }, raw })
        .then(() => acceptedAt.set(messageId, Date.now())),
    );
  }
  await Promise.all(inFlight);
  sender.close();
  await until(() => latencySink.messages.length >= LATENCY_MESSAGES, 'latency messages at the sink');
  const latencies = latencySink.messages.map((m) => m.receivedAt - acceptedAt.get(m.messageId!)!).sort((a, b) => a - b);
  await engine!.stop();
  console.log(
    `latency   accepted → delivered, ${RATE}/s, poll ${pollInterval.padEnd(5)}  ` +
      `p50 ${percentile(latencies, 50).toFixed(0).padStart(5)} ms  ` +
      `p99 ${percentile(latencies, 99).toFixed(0).padStart(5)} ms  max ${latencies.at(-1)!.toFixed(0).padStart(5)} ms`,
  );
}
if (latencySink !== nodeSink) await latencySink.close();

for (const t of throughput) {
  const goal = t.engines > 1 ? '' : `; goal ≥ 1,500 msg/s: ${t.perSecond >= 1500 ? 'met' : 'not met'}`;
  const ratio = (t.perSecond / baselinePerSecond).toFixed(2);
  console.log(`ratio     ${t.engines} engine process(es) = ${ratio}× the baseline${goal}`);
}
console.log(`   load average at the end: ${loadAverage()}`);
for (const t of throughput) {
  printResult({
    goal: t.engines === 1 ? 'delivery, one engine' : `delivery, ${t.engines} engines`,
    ...(t.engines === 1 ? { target: '≥ 1,500 msg/s', met: t.perSecond >= 1500 } : {}),
    unit: 'msg/s',
    figure: t.perSecond,
    baseline: baselinePerSecond,
    baselineName: 'nodemailer pool → the same sink',
    note: `CPU ${t.cpu.toFixed(2)} ms/msg`,
  });
}
await nodeSink?.close();
cSinkProcess?.kill('SIGTERM');
await objects.close();
await setup.close();
await database.drop();
await rm(dataDir, { recursive: true, force: true });
