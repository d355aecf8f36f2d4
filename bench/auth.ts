// The auth service (A) under a fixed load, next to bare Fastify routes on the same paths in the same run:
//   - GET /v1/config with a session cookie (session lookup, CSRF token) and without one (a new session
//     row per request, as on a reader's first visit): wrk, 1 thread, a fixed number of connections;
//   - the sign-in pair POST /v1/auth/code + POST /v1/auth/verify: a fixed number of readers, each in a
//     loop of request code → read it from the SMS provider → verify, as a person does, through a
//     keep-alive Node client (the code must be read between the two requests, which wrk cannot do).
// The service runs as its own process (`sealpost start auth`, LOG_LEVEL info as in production) against
// PostgreSQL 127.0.0.1, with a seal-service stand-in and an SMS provider stand-in in this process; the
// SMS rate limits are raised so that the loop measures the service rather than its limiter.
//
//   node --import tsx bench/auth.ts [--connections 16] [--seconds 10]
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from '../test/support/ports.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { startSealStandIn } from '../test/support/seal-stand-in.ts';
import { startSealpostProcess } from '../test/support/sealpost-process.ts';
import { startSmsCapture, type SmsCapture } from '../test/support/sms-capture.ts';
import { stopOnExit } from './support/cleanup.ts';
import { printResult, type Result } from './support/result.ts';
import { loadAverage, machineLine, treeCpuMs } from './support/proc.ts';
import { percentile } from './support/smtp-load.ts';
import { authBenchEnv } from './support/auth-env.ts';

const { values } = parseArgs({
  options: { connections: { type: 'string', default: '16' }, seconds: { type: 'string', default: '10' } },
});
const CONNECTIONS = Number(values.connections);
const SECONDS = Number(values.seconds);
const SERVICE_TOKEN = 'bench-service-token';
const hasWrk = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT'; // wrk --version exits 1 but exists
  }
})();

// --- The service, its stand-ins and the baseline ------------------------------------------------
const database = await createTestDatabase('bench_auth');
const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-bench-auth-'));
const seal = await startSealStandIn({ serviceToken: SERVICE_TOKEN });
const sms = await startSmsCapture();
const readers = Array.from({ length: CONNECTIONS }, (_, i) => ({
  email: `reader${i}@example.com`,
  method: 'sms' as const,
  mobile: `+4179${String(1_000_000 + i).padStart(7, '0')}`,
}));
const sealed = seal.register({
  raw: 'From: sender@example.org\r\nTo: readers@example.com\r\nSubject: Bench\r\n\r\nHello.\r\n',
  recipients: readers,
  subject: 'Bench',
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
    SMS_LIMIT_NUMBER_HOURLY: '100000',
    SMS_LIMIT_IP_HOURLY: '100000',
  },
  { which: 'auth' },
);
stopOnExit(auth.child);
const authUrl = auth.urls.auth;

const barePort = await freePort();
const bare = stopOnExit(
  spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./support/bare-fastify.ts', import.meta.url)), String(barePort)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  ),
);
await once(bare.stdout!, 'data');
const bareUrl = `http://127.0.0.1:${barePort}`;

// --- A small keep-alive client ------------------------------------------------------------------------
const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS * 2 });
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
function call(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(`${base}${path}`, {
      method,
      agent,
      headers: {
        ...headers,
        ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
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

/** The latest code sent to `to`, read from the end of the SMS provider's list. */
function codeFor(capture: SmsCapture, to: string): string {
  for (let i = capture.messages.length - 1; i >= 0; i--) {
    const sms = capture.messages[i]!;
    if (sms.to === to) return /\b(\d{6})\b/.exec(sms.text)![1]!;
  }
  throw new Error(`no SMS to ${to}`);
}

// --- wrk -----------------------------------------------------------------------------------------------
interface Figures {
  perSecond: number;
  p50ms: number;
  p99ms: number;
  errors: number;
  cpuMsPerRequest: number;
}
function wrk(url: string, pid: number, headers: Record<string, string> = {}): Figures {
  const cpu = treeCpuMs(pid);
  const args = [
    '-t1',
    `-c${CONNECTIONS}`,
    `-d${SECONDS}s`,
    '--latency',
    ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
    url,
  ];
  const out = execFileSync('wrk', args, { encoding: 'utf8' });
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const ms = (label: string) => {
    const match = new RegExp(`^\\s+${label}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(out);
    if (!match) return NaN;
    return Number(match[1]) * (match[2] === 'us' ? 0.001 : match[2] === 's' ? 1000 : 1);
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0);
  return {
    perSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50ms: ms('50'),
    p99ms: ms('99'),
    errors,
    cpuMsPerRequest: (treeCpuMs(pid) - cpu) / Math.max(1, requests),
  };
}

// --- The sign-in pair loop -----------------------------------------------------------------------------
async function pairLoop(base: string, pid: number, real: boolean): Promise<Figures> {
  const latencies: number[] = [];
  let errors = 0;
  const cpu = treeCpuMs(pid);
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    readers.map(async (reader) => {
      // Once per reader: a session and its CSRF token, as the reader page's first GET /v1/config.
      const first = await call(
        base,
        'GET',
        `/v1/config?messageId=${real ? sealed.id : ''}`.replace(/\?messageId=$/, ''),
      );
      let cookie = cookieOf(first) ?? '';
      let csrf = String(first.headers['x-csrf-token'] ?? '');
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const sent = await call(
          base,
          'POST',
          '/v1/auth/code',
          { cookie, 'x-csrf-token': csrf },
          { messageId: sealed.id, email: reader.email, mobile: reader.mobile, method: 'sms' },
        );
        if (sent.status !== 200) {
          if (errors++ === 0) console.error(`first code request error: ${sent.status} ${sent.body}`);
          continue;
        }
        const code = real ? codeFor(sms, reader.mobile) : '123456';
        const verified = await call(
          base,
          'POST',
          '/v1/auth/verify',
          { cookie, 'x-csrf-token': csrf },
          { code, rememberMe: false },
        );
        if (verified.status !== 200) {
          if (errors++ === 0) console.error(`first verify error: ${verified.status} ${verified.body}`);
          continue;
        }
        // Signing in rotates the session id and its CSRF token.
        cookie = cookieOf(verified) ?? cookie;
        csrf = String(verified.headers['x-csrf-token'] ?? csrf);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    perSecond: latencies.length / seconds,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    errors,
    cpuMsPerRequest: (treeCpuMs(pid) - cpu) / Math.max(1, latencies.length),
  };
}

const fmt = (f: Figures, unit: string) => {
  const latency = `p50 ${f.p50ms.toFixed(1).padStart(6)} ms  p99 ${f.p99ms.toFixed(1).padStart(6)} ms`;
  const errors = f.errors ? `  (${f.errors} ERRORS)` : '';
  return (
    `${f.perSecond.toFixed(0).padStart(6)} ${unit}/s  ${latency}  ` +
    `server CPU ${f.cpuMsPerRequest.toFixed(2)} ms/${unit}${errors}`
  );
};

console.log(`== Auth: ${CONNECTIONS} connections, ${SECONDS} s per run`);
console.log(`   ${machineLine()}`);
console.log(
  '   auth: `sealpost start auth`, LOG_LEVEL info, PostgreSQL 127.0.0.1; ' +
    'bare: Fastify, same paths, no work, no logging',
);
const summary: string[] = [];
const results: Result[] = [];
if (hasWrk) {
  // A session for the "with a session" run (wrk sends the same cookie on every request).
  const session = cookieOf(await call(authUrl, 'GET', '/v1/config'))!;
  await call(bareUrl, 'GET', '/v1/config');
  const bareConfig = wrk(`${bareUrl}/v1/config`, bare.pid!);
  console.log(`GET /v1/config   bare Fastify           ${fmt(bareConfig, 'req')}`);
  const withSession = wrk(`${authUrl}/v1/config`, auth.child.pid!, { cookie: session });
  console.log(`GET /v1/config   auth, with a session   ${fmt(withSession, 'req')}`);
  const newSession = wrk(`${authUrl}/v1/config`, auth.child.pid!);
  console.log(`GET /v1/config   auth, new session each ${fmt(newSession, 'req')}`);
  summary.push(
    `GET /v1/config: ${(withSession.perSecond / bareConfig.perSecond).toFixed(2)}× bare Fastify with a session, ` +
      `${(newSession.perSecond / bareConfig.perSecond).toFixed(2)}× with a new session per request`,
  );
  results.push({
    goal: 'GET /v1/config with a session',
    unit: 'req/s',
    figure: withSession.perSecond,
    baseline: bareConfig.perSecond,
    baselineName: 'bare Fastify',
    ratio: withSession.perSecond / bareConfig.perSecond,
  });
} else {
  console.log('GET /v1/config   skipped: wrk is not installed (Debian package wrk)');
}
const barePair = await pairLoop(bareUrl, bare.pid!, false);
console.log(`code + verify    bare Fastify           ${fmt(barePair, 'pair')}`);
const authPair = await pairLoop(authUrl, auth.child.pid!, true);
console.log(`code + verify    auth (SMS sent)        ${fmt(authPair, 'pair')}`);
summary.push(
  `code + verify: ${(authPair.perSecond / barePair.perSecond).toFixed(2)}× bare Fastify ` +
    `(${sms.messages.length} SMS sent)`,
);
console.log(summary.join('\n'));
console.log(`   load average at the end: ${loadAverage()}`);
// No goal: figures kept beside the goals' table.
for (const result of results) printResult(result);
printResult({
  goal: 'sign-in, code + verify',
  unit: 'pairs/s',
  figure: authPair.perSecond,
  baseline: barePair.perSecond,
  baselineName: 'bare Fastify',
  ratio: authPair.perSecond / barePair.perSecond,
});

agent.destroy();
bare.kill('SIGTERM');
await auth.stop();
await sms.close();
await seal.close();
await database.drop();
await rm(dataDir, { recursive: true, force: true });
