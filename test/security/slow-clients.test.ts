import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { authService } from '../../src/auth/service.ts';
import { exchangeService } from '../../src/exchange/service.ts';
import { sealService } from '../../src/seal/service.ts';
import { Reader } from '../support/auth-reader.ts';
import { startServiceForTest, type ServiceUnderTest } from '../support/services.ts';
import { startStandIn, standInEnv, TEST_MASTER_KEY, type StandIn } from '../support/seal.ts';

const LIMITS = { HTTP_IDLE_TIMEOUT: '1s', HTTP_MAX_CONNECTIONS: '40' };

/** A raw connection that sends `text` and then nothing; resolves with all it got once the server closed it. */
function stall(port: number, text: string): { socket: Socket; answer: Promise<{ text: string; afterMs: number }> } {
  const started = Date.now();
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(text);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const answer = new Promise<{ text: string; afterMs: number }>((resolve) =>
    socket.on('close', () => resolve({ text: Buffer.concat(chunks).toString(), afterMs: Date.now() - started })),
  );
  return { socket, answer };
}

const portOf = (service: ServiceUnderTest) => Number(new URL(service.url).port);
const openFiles = () => readdirSync('/proc/self/fd').length;
async function refusedConnections(service: ServiceUnderTest): Promise<number> {
  // On a fresh connection each time: a pooled one may be the one the service just closed for idling.
  const text = await (await fetch(`${service.metricsUrl}/metrics`, { headers: { connection: 'close' } })).text();
  return Number(/^http_connections_refused_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? NaN);
}

/**
 * Slow and stalled HTTP clients, against each service as it runs: a request that stops sending (in its
 * headers or its body) gets 408 and is disconnected after HTTP_IDLE_TIMEOUT, an upload that keeps
 * sending is never cut, connections past HTTP_MAX_CONNECTIONS are closed and counted, and 2,000 stalled
 * requests give their file descriptors back.
 */
describe('slow and stalled HTTP clients', () => {
  let standIn: StandIn;
  const services: Record<string, ServiceUnderTest> = {};

  before(async () => {
    standIn = await startStandIn();
    services.auth = await startServiceForTest(authService, { env: LIMITS });
    services.seal = await startServiceForTest(sealService, {
      env: { ...LIMITS, SEAL_MASTER_KEY: TEST_MASTER_KEY, ...standInEnv(standIn) },
    });
    services.exchange = await startServiceForTest(exchangeService, { env: LIMITS });
  });
  after(async () => {
    for (const service of Object.values(services)) await service.stop();
    await standIn?.close();
  });

  for (const name of ['auth', 'seal', 'exchange'] as const) {
    it(`${name}: answers 408 and closes a request whose headers or body stall, after HTTP_IDLE_TIMEOUT`, async () => {
      const port = portOf(services[name]!);
      const body = stall(
        port,
        'POST /v1/anything HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
          'Content-Length: 500\r\n\r\n{"email":"a@',
      );
      const headers = stall(port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      const idle = stall(port, '');
      for (const [what, stalled] of [
        ['body', body],
        ['headers', headers],
        ['idle connection', idle],
      ] as const) {
        const { text, afterMs } = await stalled.answer;
        assert.match(text, /^HTTP\/1\.1 408 Request Timeout\r\n/, `${what}: ${text.slice(0, 80)}`);
        assert.match(text, /\r\nConnection: close\r\n/);
        const error = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
        assert.equal(error.kind, 408);
        assert.ok(afterMs >= 900 && afterMs < 5_000, `${what}: closed after ${afterMs} ms`);
      }
    });

    it(`${name}: closes connections past HTTP_MAX_CONNECTIONS at once and counts them`, async () => {
      const service = services[name]!;
      const before = await refusedConnections(service);
      const sockets = Array.from({ length: 45 }, () => stall(portOf(service), ''));
      const closedEarly = await Promise.all(
        sockets.map(({ answer }) => Promise.race([answer.then((a) => a.afterMs < 700), sleep(700).then(() => false)])),
      );
      assert.ok(closedEarly.filter(Boolean).length >= 5, `${closedEarly.filter(Boolean).length} of 45 closed at once`);
      for (const { socket } of sockets) socket.destroy();
      // The service notices the closes before it has room for the metrics request.
      await Promise.all(sockets.map(({ answer }) => answer));
      await sleep(100);
      assert.ok((await refusedConnections(service)) - before >= 5);
    });
  }

  it('closes a stalled connection answered before its body (a 403 at the door), with no second answer', async () => {
    const { text, afterMs } = await stall(
      portOf(services.auth!),
      'POST /v1/auth/code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        'Content-Length: 500\r\n\r\n{"email":',
    ).answer;
    assert.match(text, /^HTTP\/1\.1 403 /, text.slice(0, 80));
    assert.equal(text.match(/HTTP\/1\.1 /g)?.length, 1, 'one answer only');
    assert.ok(afterMs < 5_000, `closed after ${afterMs} ms`);
  });

  it('never cuts an upload that keeps sending, however long it takes', async () => {
    const exchange = services.exchange!;
    const message = JSON.stringify({
      from: 'dana@sender.example',
      to: ['erin@rcpt.example'],
      subject: 'slow',
      text: 'x'.repeat(4_000),
    });
    const socket = connect(portOf(exchange), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.write(
      `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${exchange.serviceToken}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(message)}\r\nConnection: close\r\n\r\n`,
    );
    // Ten pieces 400 ms apart: 4 s in all, each gap well inside the 1 s idle timeout.
    const piece = Math.ceil(message.length / 10);
    for (let i = 0; i < message.length; i += piece) {
      await sleep(400);
      socket.write(message.slice(i, i + piece));
    }
    await new Promise((resolve) => socket.on('close', resolve));
    const answer = Buffer.concat(chunks).toString();
    assert.doesNotMatch(answer, /^HTTP\/1\.1 408/, 'not cut off');
    assert.match(answer, /^HTTP\/1\.1 (202|503) /, answer.slice(0, 200));
  });

  it('gives back the file descriptors of 2,000 stalled requests', async () => {
    const auth = await startServiceForTest(authService, { env: { HTTP_IDLE_TIMEOUT: '5s' } });
    try {
      // As the probe did it: GET /v1/config hands out a session and its CSRF token, no sign-in needed.
      const reader = new Reader(auth.url);
      assert.equal((await reader.get('/v1/config')).status, 200);
      const request =
        'POST /v1/auth/code HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
        `Cookie: ${reader.cookie}\r\nX-CSRF-Token: ${reader.csrf}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"email":';
      const start = openFiles();
      // In batches of 200, each connected before the next, so that the listen backlog never overflows.
      const stalled: Array<ReturnType<typeof stall>> = [];
      for (let batch = 0; batch < 10; batch++) {
        const next = Array.from({ length: 200 }, () => stall(portOf(auth), request));
        await Promise.all(next.map(({ socket }) => once(socket, 'connect')));
        stalled.push(...next);
      }
      await sleep(200);
      const during = openFiles();
      // Both ends live in this process: the client's sockets and the service's.
      assert.ok(during - start >= 3_000, `open files: ${start} before, ${during} with 2,000 stalled requests`);
      const waited = Date.now();
      const answers = await Promise.all(stalled.map(({ answer }) => answer));
      assert.ok(Date.now() - waited < 15_000, `all closed within ${Date.now() - waited} ms`);
      assert.equal(
        answers.filter((a) => /^HTTP\/1\.1 408/.test(a.text)).length,
        2_000,
        'every stalled request got its 408',
      );
      await sleep(200);
      const end = openFiles();
      assert.ok(end - start < 50, `open files back down: ${start} before, ${during} during, ${end} after`);
    } finally {
      await auth.stop();
    }
  });
});
