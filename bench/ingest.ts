// Durable SMTP ingest: Sealpost's exchange engine (payload stored, envelope row committed, then 250)
// against baselines measured in the same run, on 10 KB messages over 1, 8 and 32 reused connections:
//   - a bare smtp-server that stores nothing (the ceiling for Node.js; the goal is ≥ 0.5× of it);
//   - Postfix receiving into its queue (fsync per message, like us), when installed and run as root;
//   - Postfix's smtp-sink, a C server that discards (the ceiling of the machine), when installed.
// Each server runs as its own process; the load comes from nodemailer pools in this process.
//
//   node --import tsx bench/ingest.ts [--s3] [--messages 2000]
//     --s3   store payloads in a real S3 server (OpenStack Swift, started here) instead of local disk.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createTestDatabase } from '../test/support/postgres.ts';
import { freePort } from '../test/support/ports.ts';
import { startSealpostProcess } from '../test/support/sealpost-process.ts';
import { startS3Server, uniqueBucket } from '../test/support/s3-server.ts';
import { createS3ObjectStore } from '../src/kernel/objects/index.ts';
import { stopOnExit } from './support/cleanup.ts';
import { postfixUnavailable, startPrivatePostfix, type PrivatePostfix } from './support/postfix.ts';
import { loadAverage, machineLine, peakRssMb, treeCpuMs } from './support/proc.ts';
import { runSmtpLoad, type LoadResult } from './support/smtp-load.ts';

const { values } = parseArgs({ options: { s3: { type: 'boolean', default: false }, messages: { type: 'string', default: '2000' } } });
const MESSAGES = Number(values.messages);
const CONNECTIONS = [1, 8, 32];
const SMTP_SINK = ['/usr/sbin/smtp-sink', '/usr/lib/postfix/sbin/smtp-sink'].find((path) => existsSync(path));

interface Server {
  name: string;
  port: number;
  /** Root of the server's process tree, for its CPU time. */
  pid: number;
}

const fmt = (r: LoadResult, cpuMsPerMessage: number) =>
  `${r.perSecond.toFixed(0).padStart(6)} msg/s  p50 ${r.p50ms.toFixed(1).padStart(6)} ms  p99 ${r.p99ms.toFixed(1).padStart(6)} ms  ` +
  `server CPU ${cpuMsPerMessage.toFixed(2)} ms/msg${r.failed ? `  (${r.failed} FAILED)` : ''}`;

async function measure(server: Server, connections: number, count: number): Promise<{ result: LoadResult; cpu: number }> {
  await runSmtpLoad(server.port, connections, Math.min(50, count)); // warm-up: connections, JIT
  const before = treeCpuMs(server.pid);
  const result = await runSmtpLoad(server.port, connections, count);
  return { result, cpu: (treeCpuMs(server.pid) - before) / count };
}

const database = await createTestDatabase('bench_ingest');
const s3 = values.s3 ? await startS3Server() : undefined;
const bucket = s3 ? uniqueBucket('bench') : undefined;
if (s3) await createS3ObjectStore({ ...s3, bucket: bucket! }).ensureBucket();

const children: ChildProcess[] = [];
async function startChild(command: string, args: string[], ready: 'stdout' | number): Promise<ChildProcess> {
  const child = stopOnExit(spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] }));
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

const barePort = await freePort();
const bare = await startChild(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./support/bare-sink.ts', import.meta.url)), String(barePort)], 'stdout');

let cSink: Server | undefined;
if (SMTP_SINK) {
  const port = await freePort();
  // -u nobody: it refuses to run as root otherwise; backlog 256.
  const child = await startChild(SMTP_SINK, [...(process.getuid?.() === 0 ? ['-u', 'nobody'] : []), `127.0.0.1:${port}`, '256'], port);
  cSink = { name: 'smtp-sink (C)', port, pid: child.pid! };
}

let postfix: PrivatePostfix | undefined;
const noPostfix = postfixUnavailable();
if (!noPostfix) postfix = await startPrivatePostfix(await freePort());

const sealpost = await startSealpostProcess(
  {
    DATABASE_URL: database.url,
    ADMIN_TOKEN: 'bench-admin',
    SERVICE_TOKEN: 'bench-service',
    // Ingest only: no delivery competing for the CPU.
    DELIVERY_ENABLED: 'false',
    SMTP_MAX_CONNECTIONS: '1000',
    LOG_LEVEL: 'info',
    ...(s3
      ? { S3_ENDPOINT: s3.endpoint, S3_BUCKET: bucket!, S3_REGION: s3.region, S3_ACCESS_KEY_ID: s3.accessKeyId, S3_SECRET_ACCESS_KEY: s3.secretAccessKey }
      : {}),
  },
  { which: 'exchange' },
);
stopOnExit(sealpost.child);
const rule = await fetch(`${sealpost.urls.exchange}/v1/config`, {
  method: 'POST',
  headers: { authorization: 'Bearer bench-admin', 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'bench', priority: 1, configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] } }),
});
if (rule.status !== 201) throw new Error(`rule: ${rule.status} ${await rule.text()}`);

const servers: Server[] = [
  { name: 'bare smtp-server', port: barePort, pid: bare.pid! },
  ...(cSink ? [cSink] : []),
  ...(postfix ? [{ name: 'Postfix → queue', port: postfix.port, pid: postfix.masterPid }] : []),
  { name: 'sealpost', port: sealpost.ports.smtp, pid: sealpost.child.pid! },
];

console.log(`== SMTP ingest: 10 KB messages, ${MESSAGES} per run (500 with 1 connection)`);
console.log(`   ${machineLine()}`);
console.log(`   Sealpost: payloads on ${s3 ? 'S3 (Swift)' : 'local disk (fsync of file and folder)'}, envelopes in PostgreSQL 127.0.0.1, LOG_LEVEL info`);
if (noPostfix) console.log(`   Postfix baseline skipped: ${noPostfix}`);
if (!SMTP_SINK) console.log('   smtp-sink baseline skipped: Postfix\'s smtp-sink is not installed');
const summary: string[] = [];
for (const connections of CONNECTIONS) {
  const count = connections === 1 ? Math.min(MESSAGES, 500) : MESSAGES;
  const results = new Map<string, LoadResult>();
  for (const server of servers) {
    const { result, cpu } = await measure(server, connections, count);
    results.set(server.name, result);
    console.log(`${String(connections).padStart(2)} conn  ${server.name.padEnd(17)} ${fmt(result, cpu)}`);
  }
  const ours = results.get('sealpost')!.perSecond;
  const ratio = ours / results.get('bare smtp-server')!.perSecond;
  const vsPostfix = postfix ? `, ${(ours / results.get('Postfix → queue')!.perSecond).toFixed(2)}× Postfix` : '';
  const line = `${String(connections).padStart(2)} conn  sealpost = ${ratio.toFixed(2)}× the bare smtp-server${vsPostfix}  (goal ≥ 0.5×: ${ratio >= 0.5 ? 'met' : 'not met'})`;
  console.log(line);
  summary.push(line);
}
if (postfix) console.log(`Postfix queued ${await postfix.queued()} messages (its maillog)`);
console.log(`peak RSS: sealpost exchange ${peakRssMb(sealpost.child.pid!).toFixed(0)} MB, bare smtp-server ${peakRssMb(bare.pid!).toFixed(0)} MB`);
console.log(summary.join('\n'));
console.log(`   load average at the end: ${loadAverage()}`);

for (const child of children) child.kill('SIGTERM');
await postfix?.stop();
await sealpost.stop();
await s3?.stop();
await database.drop();
