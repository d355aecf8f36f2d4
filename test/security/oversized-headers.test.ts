import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { signInAlice, startAuthHarness, ALICE, BOB, type AuthHarness } from '../support/auth-harness.ts';
import {
  assertStoredExactly,
  dotStuffed,
  exchangeSmtpPort,
  queuedId,
  readPayload,
  sendOrdinaryMessage,
  startQuietExchange,
  storedAs,
  withoutReceived,
} from '../support/exchange-fuzz.ts';
import { startThreeServices, type ThreeServices } from '../support/three-services.ts';
import { assertErrorObject } from '../support/fuzz.ts';
import { postSeal, startSealOnStandIn, startStandIn, type StandIn } from '../support/seal.ts';
import type { ServiceUnderTest } from '../support/services.ts';
import { SmtpTalk } from '../support/smtp-talk.ts';

interface RawAnswer {
  status: number | undefined;
  body: unknown;
  /** The server closed or reset the connection (after its answer, or instead of one). */
  closed: boolean;
}

/** One HTTP/1.1 request written byte for byte; the answer as the server sent it, however it ended. */
function rawRequest(url: string, head: string, timeoutMs = 10_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {}); // EPIPE/ECONNRESET while we still write a head it refused: expected
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const match = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
      let body: unknown = match?.[3];
      try {
        body = JSON.parse(match?.[3] ?? '');
      } catch {
        // not JSON
      }
      resolve({ status: match ? Number(match[1]) : undefined, body, closed: true });
    });
    socket.write(head);
  });
}

const request = (path: string, headers: string[], method = 'GET') =>
  [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...headers, 'Connection: close', '', ''].join('\r\n');

describe('oversized HTTP headers: a 431 error object or a closed connection, and the service keeps serving', () => {
  let exchange: ServiceUnderTest;
  let services: ThreeServices;
  let seal: ServiceUnderTest;
  let harness: AuthHarness;

  before(async () => {
    services = await startThreeServices();
    ({ exchange, seal, harness } = services);
  });
  after(() => services?.stop());

  it('refuses huge and countless headers, long URLs, huge cookies and tokens on all three services', async () => {
    const services = { exchange, seal, auth: harness.auth };
    const hugeBearer = `Authorization: Bearer ${'t'.repeat(64 * 1024)}`;
    for (const [name, service] of Object.entries(services)) {
      const cases: Array<[string, string]> = [
        ['a 100 KB header', request('/healthz', [`X-Big: ${'a'.repeat(100 * 1024)}`])],
        ['a 1 MB header', request('/healthz', [`X-Big: ${'a'.repeat(1024 * 1024)}`])],
        [
          '3000 headers',
          request(
            '/healthz',
            Array.from({ length: 3000 }, (_, i) => `X-H${i}: v`),
          ),
        ],
        ['a 100 KB URL', request(`/healthz?${'q'.repeat(100 * 1024)}`, [])],
        ['a 64 KB cookie', request('/v1/config', [`Cookie: sealpost_session=${'c'.repeat(64 * 1024)}`])],
        [
          'a 64 KB bearer token',
          `${request('/v1/config', [hugeBearer, 'Content-Type: application/json', 'Content-Length: 2'], 'POST')}{}`,
        ],
      ];
      for (const [label, head] of cases) {
        const answer = await rawRequest(service.url, head);
        const what = `${name} with ${label}`;
        if (answer.status === undefined) {
          assert.ok(answer.closed, `${what}: closed without an answer`);
        } else {
          assert.equal(answer.status, 431, `${what}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
          assertErrorObject(431, answer.body, what);
        }
        const health = await fetch(`${service.url}/healthz`);
        assert.equal(health.status, 200, `${name} still serves after ${label}`);
      }
      // Headers of an ordinary size (here 12 KB) are still fine.
      const normal = await rawRequest(service.url, request('/healthz', [`X-Fine: ${'f'.repeat(12 * 1024)}`]));
      assert.equal(normal.status, 200, `${name}: ${JSON.stringify(normal.body)}`);
    }
  });
});

describe('oversized message headers over SMTP, JSON and into the services that parse them', () => {
  let exchange: ServiceUnderTest;
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  let harness: AuthHarness;
  const acknowledged: string[] = [];
  const LIMIT = 4 * 1024 * 1024;

  const message = (headers: string) =>
    Buffer.from(
      `From: Sender <sender@example.org>\r\nTo: ${ALICE.email}, ${BOB.email}\r\nSubject: big headers\r\n` +
        `X-Sealpost-Mobile: ${ALICE.email}=${ALICE.mobile}\r\n${headers}\r\nHello.\r\n`,
    );
  const longLine = message(`X-Long: ${'a'.repeat(1024 * 1024)}\r\n`);
  const manyLines = message(Array.from({ length: 10_000 }, (_, i) => `X-Header-${i}: value ${i}\r\n`).join(''));
  const overLimit = message(`X-Long: ${'b'.repeat(LIMIT + 1024)}\r\n`);

  before(async () => {
    exchange = await startQuietExchange({ SMTP_MAX_MESSAGE_SIZE: String(LIMIT) });
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn);
    harness = await startAuthHarness({ env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', EXCHANGE_URL: exchange.url } });
  });
  after(async () => {
    await harness?.stop();
    await seal?.stop();
    await standIn?.close();
    await exchange?.stop();
  });

  async function overSmtp(raw: Buffer): Promise<string> {
    const { talk } = await SmtpTalk.open(exchangeSmtpPort(exchange));
    try {
      assert.match(await talk.send('EHLO big.test'), /^250[ -]/);
      assert.match(await talk.send('MAIL FROM:<sender@example.org>'), /^250 /);
      assert.match(await talk.send(`RCPT TO:<${ALICE.email}>`), /^250 /);
      assert.match(await talk.send('DATA'), /^354 /);
      talk.write(dotStuffed(raw));
      return await talk.reply();
    } finally {
      talk.close();
    }
  }

  it('stores a 1 MB header line and 10,000 header lines exactly over SMTP; over the size limit is 552', async () => {
    for (const [label, raw] of [
      ['a 1 MB header line', longLine],
      ['10,000 header lines', manyLines],
    ] as const) {
      const reply = await overSmtp(raw);
      const id = queuedId(reply);
      assert.ok(id, `${label}: ${reply}`);
      acknowledged.push(id);
      assert.ok(
        withoutReceived(await readPayload(exchange, id)).equals(storedAs(raw)),
        `${label} stored byte for byte`,
      );
    }
    assert.match(await overSmtp(overLimit), /^552 5\.3\.4 /);
    await assertStoredExactly(exchange, acknowledged);
  });

  it('refuses a 1 MB SMTP command line with a proper reply and keeps serving', async () => {
    const { talk } = await SmtpTalk.open(exchangeSmtpPort(exchange));
    talk.write(`EHLO big.test\r\nMAIL FROM:<${'a'.repeat(1024 * 1024)}@example.org>\r\n`);
    const replies: string[] = [];
    try {
      for (;;) replies.push(await talk.reply());
    } catch {
      // closed by the server after its last reply
    }
    talk.close();
    assert.match(replies[0]!, /^250[ -]/);
    assert.ok(replies.length >= 2, JSON.stringify(replies));
    for (const reply of replies.slice(1)) assert.match(reply, /^[45]\d\d[ -]/, JSON.stringify(replies));
    const ordinary = queuedId(await sendOrdinaryMessage(exchangeSmtpPort(exchange)));
    assert.ok(ordinary);
    acknowledged.push(ordinary);
    await assertStoredExactly(exchange, acknowledged);
  });

  it('takes the same messages as JSON raw, and refuses the one over the limit with 413', async () => {
    for (const raw of [longLine, manyLines, overLimit]) {
      const response = await fetch(`${exchange.url}/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${exchange.serviceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'sender@example.org', to: [ALICE.email], raw: raw.toString('base64') }),
      });
      const body = (await response.json()) as { id: string };
      if (raw === overLimit) {
        assertErrorObject(413, body, 'over the limit');
        continue;
      }
      assert.equal(response.status, 202, JSON.stringify(body));
      acknowledged.push(body.id);
      assert.ok((await readPayload(exchange, body.id)).equals(raw));
    }
    await assertStoredExactly(exchange, acknowledged);
  });

  it('seals them (B parses the headers) and the reader shows them (A parses them again), without a crash', async () => {
    const outcomes: string[] = [];
    for (const [label, raw] of [
      ['a 1 MB header line', longLine],
      ['10,000 header lines', manyLines],
    ] as const) {
      const sealed = await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, raw);
      const body = (await sealed.json()) as { id: string };
      if (sealed.status === 201) {
        const content = await fetch(`${seal.url}/v1/sealed/${body.id}/content`, {
          headers: { authorization: `Bearer ${seal.serviceToken}` },
        });
        assert.ok(Buffer.from(await content.arrayBuffer()).equals(raw), `${label} reads back byte for byte`);
      } else {
        // The MIME parser's own limit on one header block: a clean refusal, which the exchange's
        // delivery turns into a failure and a bounce.
        assertErrorObject(400, body, label);
        outcomes.push(`${label}: seal 400 (${(body as unknown as { message: string }).message})`);
      }

      const record = harness.seal.register({ raw, recipients: [ALICE, BOB], subject: 'big headers' });
      const reader = harness.reader();
      await signInAlice(harness, reader, record.id);
      const shown = await reader.get('/v1/message');
      if (shown.status === 200) {
        assert.equal(shown.body.subject, 'big headers');
        assert.equal(shown.body.text.trim(), 'Hello.');
      } else {
        // A message the reader's MIME parser refuses is shown as not readable, never as a crash.
        assertErrorObject(502, shown.body, `${label}: reading`);
        outcomes.push(`${label}: reader 502`);
      }
      // Replying reads the original's headers for the subject and threading: it goes out either way.
      const replied = await reader.request('POST', '/v1/message/reply', { body: { text: 'Received.' } });
      assert.equal(replied.status, 202, `${label}: replying: ${JSON.stringify(replied.body)}`);
      acknowledged.push(replied.body.envelopeId);
      const reply = (await readPayload(exchange, replied.body.envelopeId)).toString('latin1');
      assert.match(reply, /^Subject: Re: big headers\r$/m, `${label}: the reply's subject`);
    }
    assert.equal((await fetch(`${seal.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${harness.auth.url}/healthz`)).status, 200);
    await assertStoredExactly(exchange, acknowledged);
  });
});
