// Memory, read from /proc as the kernel sees it (VmRSS now, VmHWM for the peak):
//   - the exchange engine (`sealpost start exchange`, default settings) holding 1,000 idle SMTP sessions
//     (connected, greeted, EHLO answered), next to a bare smtp-server holding the same sessions;
//     goal < 250 MB RSS;
//   - the auth service (`sealpost start auth`) taking a 1 GB reply attachment on POST /v1/message/files,
//     the file generated as it is sent; goal < 150 MB peak RSS. Payloads go to local disk, or to a real
//     S3 server (OpenStack Swift, multipart) with --s3; --scan adds clamd scanning on the way.
//
//   node --import tsx bench/memory.ts [--sessions 1000] [--upload-mib 1024] [--s3] [--scan]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Reader } from '../test/support/auth-reader.ts';
import { startClamd, type ClamdTestServer } from '../test/support/clamd.ts';
import { generatedBytes, uploadFile } from '../test/support/multipart-upload.ts';
import { freePort } from '../test/support/ports.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { s3Env, startS3Server, uniqueBucket } from '../test/support/s3-server.ts';
import { startSealStandIn } from '../test/support/seal-stand-in.ts';
import { startSealpostProcess } from '../test/support/sealpost-process.ts';
import { startSmsCapture } from '../test/support/sms-capture.ts';
import { createS3ObjectStore } from '../src/kernel/objects/s3.ts';
import { stopOnExit } from './support/cleanup.ts';
import { loadAverage, machineLine, peakRssMb, resetPeakRss, rssMb } from './support/proc.ts';
import { authBenchEnv } from './support/auth-env.ts';
import { printResult, type Result } from './support/result.ts';

/** `tsc -p tsconfig.build.json` (the server half of `npm run build`): what the production runs below start. */
async function buildServer(): Promise<void> {
  const tsc = spawn(
    process.execPath,
    [fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.build.json'],
    {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: 'inherit',
    },
  );
  const [code] = await once(tsc, 'exit');
  if (code !== 0) throw new Error(`tsc -p tsconfig.build.json exited with ${code}`);
}

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1000' },
    'upload-mib': { type: 'string', default: '1024' },
    s3: { type: 'boolean', default: false },
    scan: { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const UPLOAD_BYTES = Number(values['upload-mib']) * 1024 * 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

console.log(`== Memory`);
console.log(`   ${machineLine()}`);

// --- Idle SMTP sessions ----------------------------------------------------------------------------
/** Opens a session: connect, read the 220 greeting, EHLO, read the last 250 line. */
function openSession(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buffer = '';
    let greeted = false;
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setEncoding('utf8');
    socket.once('error', fail);
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      if (!greeted && /^220 .*\r\n/m.test(buffer)) {
        greeted = true;
        buffer = '';
        socket.write('EHLO bench.example\r\n');
      } else if (greeted && /^250 .*\r\n/m.test(buffer)) {
        socket.removeAllListeners('data');
        socket.off('error', fail);
        socket.on('error', () => {});
        resolve(socket);
      } else if (/^[45]\d\d /m.test(buffer)) {
        fail(new Error(`refused: ${buffer.trim()}`));
      }
    });
  });
}

async function holdSessions(port: number, pid: number): Promise<{ before: number; with: number; peak: number }> {
  await sleep(1000);
  const before = rssMb(pid);
  resetPeakRss(pid);
  const sockets: Socket[] = [];
  try {
    // 100 at a time: smtp-server greets each after 100 ms, so the 1,000 take a couple of seconds.
    for (let opened = 0; opened < SESSIONS; opened += 100) {
      sockets.push(
        ...(await Promise.all(Array.from({ length: Math.min(100, SESSIONS - opened) }, () => openSession(port)))),
      );
    }
    await sleep(2000); // idle, as they would sit between messages
    return { before, with: rssMb(pid), peak: peakRssMb(pid) };
  } finally {
    for (const socket of sockets) socket.destroy();
  }
}

const database = await createTestDatabase('bench_memory');
const barePort = await freePort();
const bare = stopOnExit(
  spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./support/bare-sink.ts', import.meta.url)), String(barePort)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  ),
);
await once(bare.stdout!, 'data');
const exchange = await startSealpostProcess(
  { DATABASE_URL: database.url, ADMIN_TOKEN: 'bench-admin', SERVICE_TOKEN: 'bench-service', DELIVERY_ENABLED: 'false' },
  { which: 'exchange' },
);
stopOnExit(exchange.child);

const bareSessions = await holdSessions(barePort, bare.pid!);
const ourSessions = await holdSessions(exchange.ports.smtp, exchange.child.pid!);
const perSession = (r: typeof ourSessions) => (((r.with - r.before) * 1024) / SESSIONS).toFixed(1);
const sessionFigures = (r: typeof ourSessions) =>
  `RSS ${r.before.toFixed(0)} → ${r.with.toFixed(0)} MB ` +
  `(peak ${r.peak.toFixed(0)} MB, ${perSession(r)} KB per session)`;
console.log(`${SESSIONS} idle SMTP sessions  bare smtp-server  ${sessionFigures(bareSessions)}`);
console.log(`${SESSIONS} idle SMTP sessions  sealpost exchange ${sessionFigures(ourSessions)}`);
const sessionsGoal = Math.max(ourSessions.with, ourSessions.peak) < 250;
const sessionsLine =
  `idle sessions: sealpost ${ourSessions.peak.toFixed(0)} MB peak with ${SESSIONS} sessions ` +
  `vs bare smtp-server ${bareSessions.peak.toFixed(0)} MB ` +
  `(${(ourSessions.peak / bareSessions.peak).toFixed(2)}×); goal < 250 MB: ${sessionsGoal ? 'met' : 'not met'}`;
const goals: Result[] = [
  {
    goal: 'memory, idle SMTP sessions, exchange RSS',
    target: '< 250 MB',
    unit: 'MB',
    figure: Math.max(ourSessions.with, ourSessions.peak),
    baseline: bareSessions.peak,
    baselineName: 'bare smtp-server',
    met: sessionsGoal,
    note: `${SESSIONS.toLocaleString('en')} sessions, ${perSession(ourSessions)} KB each`,
  },
];
bare.kill('SIGTERM');
await exchange.stop();

// --- A 1 GB upload to the auth service ----------------------------------------------------------------
const SERVICE_TOKEN = 'bench-service-token';
const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-bench-memory-'));
const seal = await startSealStandIn({ serviceToken: SERVICE_TOKEN });
const sms = await startSmsCapture();
const s3 = values.s3 ? await startS3Server() : undefined;
const bucket = s3 ? uniqueBucket('bench') : undefined;
if (s3) await createS3ObjectStore({ ...s3, bucket: bucket! }).ensureBucket();
let clamd: ClamdTestServer | undefined;
if (values.scan) clamd = await startClamd({ streamMaxLength: '4000M' });
const limit = `${Math.ceil(UPLOAD_BYTES / 1024 / 1024) + 16}MiB`;
const reader = { email: 'alice@example.com', method: 'sms' as const, mobile: '+41791234567' };

/** Starts the auth service, signs in, uploads the file once to warm up and once measured. */
async function uploadRun(
  nodeOptions: string | undefined,
  built: boolean,
): Promise<{ idle: number; peak: number; seconds: number; how: string }> {
  // A message of its own for each run, so that each starts with an empty draft (REPLY_MAX_TOTAL_SIZE).
  const sealed = seal.register({
    raw: 'From: sender@example.org\r\nTo: alice@example.com\r\nSubject: Upload\r\n\r\nHi.\r\n',
    recipients: [reader],
    subject: 'Upload',
  });
  const auth = await startSealpostProcess(
    {
      ...authBenchEnv({
        databaseUrl: database.url,
        dataDir,
        serviceToken: SERVICE_TOKEN,
        sealUrl: seal.url,
        smsUrl: sms.url,
      }),
      ATTACHMENT_MAX_SIZE: limit,
      REPLY_MAX_TOTAL_SIZE: limit,
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      ...(clamd ? { ...clamd.env, ATTACHMENTS_REQUIRE_SCAN: 'true' } : {}),
      ...(s3 ? s3Env(s3, bucket!) : {}),
    },
    { which: 'auth', built },
  );
  stopOnExit(auth.child);
  try {
    const alice = new Reader(auth.urls.auth);
    await alice.get(`/v1/config?messageId=${sealed.id}`);
    const sent = await alice.request('POST', '/v1/auth/code', {
      body: { messageId: sealed.id, email: reader.email, mobile: reader.mobile, method: 'sms' },
    });
    if (sent.status !== 200) throw new Error(`code: ${sent.status} ${JSON.stringify(sent.body)}`);
    const verified = await alice.request('POST', '/v1/auth/verify', {
      body: { code: sms.lastCodeTo(reader.mobile), rememberMe: false },
    });
    if (verified.status !== 200) throw new Error(`verify: ${verified.status} ${JSON.stringify(verified.body)}`);
    await alice.get('/v1/message/files'); // the CSRF token of the signed-in session

    // Warm-up: every code path of an upload loaded once, so the reading is about the big one.
    const warm = await uploadFile(alice, {
      filename: 'warm-up.bin',
      content: generatedBytes(8 * 1024 * 1024),
      size: 8 * 1024 * 1024,
    });
    if (warm.status !== 201) throw new Error(`warm-up upload: ${warm.status} ${JSON.stringify(warm.body)}`);
    await sleep(1000);
    const pid = auth.child.pid!;
    const idle = rssMb(pid);
    const resettable = resetPeakRss(pid);
    let sampledPeak = idle;
    const sampler = setInterval(() => (sampledPeak = Math.max(sampledPeak, rssMb(pid))), 50);
    const started = performance.now();
    const uploaded = await uploadFile(alice, {
      filename: 'big.bin',
      content: generatedBytes(UPLOAD_BYTES),
      size: UPLOAD_BYTES,
    });
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    if (uploaded.status !== 201) throw new Error(`upload: ${uploaded.status} ${JSON.stringify(uploaded.body)}`);
    return {
      idle,
      peak: resettable ? peakRssMb(pid) : sampledPeak,
      seconds,
      how: resettable ? 'VmHWM' : 'sampled every 50 ms',
    };
  } finally {
    await auth.stop();
  }
}

const mib = UPLOAD_BYTES / 1024 / 1024;
const uploadLines: string[] = [];
// The TypeScript through tsx (`npm start`, bin/sealpost.js), then the compiled server of `npm run build`
// (what the Dockerfile runs) with Node's defaults and with V8's young generation capped (an operator's
// NODE_OPTIONS, not a default).
await buildServer();
const destination = s3 ? 'S3 (Swift, multipart)' : 'local disk';
const scanned = clamd ? ', scanned by clamd' : ', not scanned';
for (const [nodeOptions, built] of [
  [undefined, false],
  [undefined, true],
  ['--max-semi-space-size=2', true],
] as const) {
  const run = await uploadRun(nodeOptions, built);
  const server = built ? 'node dist/server/cli/main.js' : 'bin/sealpost.js through tsx';
  const flags = `${server}${nodeOptions ? `, NODE_OPTIONS=${nodeOptions}` : ''}`;
  console.log(
    `${mib} MiB upload  auth (${flags}) RSS ${run.idle.toFixed(0)} MB before, ` +
      `peak ${run.peak.toFixed(0)} MB during (${run.how}), ` +
      `${(mib / run.seconds).toFixed(0)} MiB/s, to ${destination}${scanned}`,
  );
  // The goal is the production set-up's (compose.yaml runs auth compiled, young generation capped).
  const production = built && nodeOptions !== undefined;
  goals.push({
    goal: `memory, upload, auth peak RSS${production ? '' : built ? ', compiled, Node defaults' : ', through tsx'}`,
    ...(production ? { target: '< 150 MB', met: run.peak < 150 } : {}),
    unit: 'MB',
    figure: run.peak,
    note: `${mib.toLocaleString('en')} MiB, ${(run.peak - run.idle).toFixed(0)} MB above idle`,
  });
  uploadLines.push(
    `${mib} MiB upload, ${flags}: auth peak RSS ${run.peak.toFixed(0)} MB ` +
      `(${(run.peak - run.idle).toFixed(0)} MB above idle); ` +
      `goal < 150 MB: ${run.peak < 150 ? 'met' : 'not met'}`,
  );
}
console.log(sessionsLine);
console.log(uploadLines.join('\n'));
console.log(`   load average at the end: ${loadAverage()}`);
for (const goal of goals) printResult(goal);

await clamd?.stop();
await s3?.stop();
await sms.close();
await seal.close();
await database.drop();
await rm(dataDir, { recursive: true, force: true });
