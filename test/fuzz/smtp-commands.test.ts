import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import {
  assertStoredExactly,
  exchangeSmtpPort,
  queuedId,
  readPayload,
  sendOrdinaryMessage,
  startQuietExchange,
} from '../support/exchange-fuzz.ts';
import { fuzz } from '../support/fuzz.ts';
import type { ServiceUnderTest } from '../support/services.ts';

/** Small, so that some of the generated data goes over it (552) without the streams getting large. */
const MAX_SIZE = 48 * 1024;
const MAX_RECIPIENTS = 3;

// ---- What a client may send: commands, real and made up, well and badly formed, and raw data. ----

const VERBS = [
  'EHLO',
  'HELO',
  'LHLO',
  'MAIL',
  'RCPT',
  'DATA',
  'RSET',
  'NOOP',
  'VRFY',
  'EXPN',
  'HELP',
  'STARTTLS',
  'AUTH',
  'BDAT',
  'ETRN',
  'XCLIENT',
  'XFORWARD',
  'TURN',
  'SEND',
  'SAML',
  'SOML',
  'ATRN',
  'BURL',
  'QUIT',
];
/** Characters that matter to SMTP and address parsers, and some that should not be there at all. */
const TRICKY = [...'ab.@<>"\\ ,:;[]()=+-_\t\x00\x01\x1b\x7f\r\né日\u202e', '\r\n', '\n', '..'];

const trickyText = (maxLength: number) => fc.string({ unit: fc.constantFrom(...TRICKY), maxLength });
const address = fc.oneof(
  fc.constantFrom(
    'a@example.com',
    'b@example.com',
    '',
    'postmaster',
    'user@[127.0.0.1]',
    'ü@exämple.com',
    '"q u"@example.com',
  ),
  fc.emailAddress(),
  trickyText(40),
);
const parameter = fc.oneof(
  fc.constantFrom(
    'SIZE=100',
    'SIZE=abc',
    'SIZE=999999999999',
    'SIZE=-1',
    'BODY=8BITMIME',
    'BODY=BINARYMIME',
    'BODY=x',
    'SMTPUTF8',
    'RET=FULL',
    'ENVID=x',
    'NOTIFY=NEVER',
    'AUTH=<>',
  ),
  fc.tuple(fc.string({ maxLength: 8 }), trickyText(12)).map(([key, value]) => `${key}=${value}`),
);
const parameters = fc.array(parameter, { maxLength: 4 }).map((list) => (list.length ? ` ${list.join(' ')}` : ''));

const commandLine: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.mixedCase(fc.constantFrom(...VERBS)) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom('EHLO', 'HELO'), fc.oneof(fc.domain(), trickyText(30), fc.constant('')))
      .map(([verb, host]) => `${verb} ${host}`),
  },
  { weight: 4, arbitrary: fc.tuple(address, parameters).map(([from, params]) => `MAIL FROM:<${from}>${params}`) },
  { weight: 4, arbitrary: fc.tuple(address, parameters).map(([to, params]) => `RCPT TO:<${to}>${params}`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom('MAIL FROM:', 'RCPT TO:', 'MAIL FROM: ', 'RCPT  TO:', 'VRFY ', 'AUTH PLAIN ', 'BDAT '),
        trickyText(40),
      )
      .map(([a, b]) => a + b),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 120 }) },
  { weight: 1, arbitrary: fc.integer({ min: 400, max: 20_000 }).map((n) => `NOOP ${'x'.repeat(n)}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'GET / HTTP/1.1',
      'POST /v1/messages HTTP/1.0',
      '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',
    ),
  },
);
const lineEnd = fc.constantFrom('\r\n', '\r\n', '\r\n', '\r\n', '\n', '\r', '');

/** Bytes as they would follow DATA: text, binary, lines starting with dots, sometimes the end-of-data line. */
const dataChunk = fc.oneof(
  fc.uint8Array({ maxLength: 3000 }).map((bytes) => Buffer.from(bytes)),
  fc
    .array(
      fc.oneof(
        fc.string({ maxLength: 80 }),
        fc.constantFrom('.', '..', '.\r', 'Subject: x', 'From: <a@example.com>', '--b'),
      ),
      { maxLength: 30 },
    )
    .chain((lines) => fc.constantFrom('\r\n', '\n').map((eol) => Buffer.from(lines.join(eol) + eol))),
  fc.integer({ min: MAX_SIZE - 1000, max: MAX_SIZE + 4000 }).map((n) => Buffer.alloc(n, 'y')),
  fc.constant(Buffer.from('\r\n.\r\n')),
);

/**
 * A whole, valid transaction in the middle of the noise (EHLO resets whatever came before): the server must take it
 * (250) and store it.
 */
const transaction = fc
  .tuple(fc.emailAddress(), fc.array(fc.emailAddress(), { minLength: 1, maxLength: 2 }), fc.string({ maxLength: 200 }))
  .map(([from, to, text]) =>
    Buffer.from(
      [
        'EHLO transaction.test',
        `MAIL FROM:<${from}>`,
        ...to.map((rcpt) => `RCPT TO:<${rcpt}>`),
        'DATA',
        'Subject: fuzz',
        '',
        text.replace(/\r|\n/g, ' ').replace(/^\./, '..'),
        '.',
        '',
      ].join('\r\n'),
    ),
  );

const piece = fc.oneof(
  {
    weight: 10,
    arbitrary: fc
      .tuple(commandLine, lineEnd)
      .map(([line, end]) => Buffer.from(line + end, /[^\x00-\xff]/.test(line) ? 'utf8' : 'latin1')),
  },
  { weight: 3, arbitrary: dataChunk },
  { weight: 3, arbitrary: transaction },
);

interface Stream {
  /** Write before the greeting (smtp-server refuses early talkers with 421). */
  earlyTalk: boolean;
  pieces: Array<{ bytes: Buffer; pause: boolean }>;
  /** graceful: end any DATA, then QUIT, and wait for the server to close; abrupt: cut the connection. */
  ending: 'graceful' | 'abrupt';
}

const stream: fc.Arbitrary<Stream> = fc
  .record({
    earlyTalk: fc.constantFrom(false, false, false, false, false, false, false, true),
    pieces: fc.array(fc.record({ bytes: piece, pause: fc.boolean() }), { minLength: 1, maxLength: 25 }),
    ending: fc.constantFrom<'graceful' | 'abrupt'>('graceful', 'graceful', 'abrupt'),
  })
  .map((plan) =>
    plan.ending === 'abrupt'
      ? { ...plan, pieces: plan.pieces.map((p) => ({ ...p, bytes: withoutEndOfData(p.bytes) })) }
      : plan,
  );

/**
 * A stream that is cut off must not complete a message on its way: whether its 250 arrived before the
 * cut would be a race, and the count of acknowledged messages with it. Every `.` before a CRLF (the
 * only way to end DATA) gets a space, also where a piece ends in the middle of one.
 */
function withoutEndOfData(bytes: Buffer): Buffer {
  const text = bytes
    .toString('latin1')
    .replace(/\.\r\n/g, '. \r\n')
    .replace(/\.\r?$/, (end) => `${end} `);
  return Buffer.from(text, 'latin1');
}

/** Every byte the server sent on one connection. */
async function play(port: number, plan: Stream): Promise<{ received: string; closedByServer: boolean }> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let closed = false;
  let lastData = Date.now();
  const closedPromise = new Promise<void>((resolve) =>
    socket.on('close', () => {
      closed = true;
      resolve();
    }),
  );
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    lastData = Date.now();
  });
  socket.on('error', () => {}); // EPIPE/ECONNRESET after the server hung up are expected here
  await new Promise<void>((resolve) => socket.once('connect', resolve).once('error', resolve));
  const text = () => Buffer.concat(chunks).toString('latin1');
  const waitUntil = async (ready: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!ready() && Date.now() < deadline) await sleep(5);
    return ready();
  };
  if (!plan.earlyTalk)
    assert.ok(await waitUntil(() => text().includes('\r\n') || closed, 5000), 'a greeting within 5 s');

  for (const { bytes, pause } of plan.pieces) {
    if (closed) break;
    socket.write(bytes);
    if (pause) await sleep(1);
  }
  if (plan.ending === 'graceful') {
    if (!closed) socket.write('\r\n.\r\nQUIT\r\n');
    const ended = await Promise.race([closedPromise.then(() => true), sleep(15_000, false, { ref: false })]);
    socket.destroy();
    assert.ok(ended, `the server closes the connection after QUIT (got ${JSON.stringify(text().slice(-300))})`);
    return { received: text(), closedByServer: true };
  }
  // Abrupt: let the replies to what was sent arrive first (a message completed in the stream gets its 250
  // before we go), then cut the connection in whatever state it is.
  await waitUntil(() => closed || Date.now() - lastData > 150, 10_000);
  const closedByServer = closed;
  socket.destroy();
  await closedPromise;
  return { received: text(), closedByServer };
}

/** Every line a proper SMTP reply: `ddd ` or `ddd-`, no stray CR or LF inside, the last one complete. */
function assertReplies(received: string, context: string): void {
  if (received === '') return;
  assert.ok(
    received.endsWith('\r\n'),
    `the last reply line is complete: ${JSON.stringify(received.slice(-200))}\n${context}`,
  );
  for (const line of received.slice(0, -2).split('\r\n')) {
    assert.match(line, /^\d{3}[ -]/, `a proper SMTP reply line: ${JSON.stringify(line)}\n${context}`);
    assert.doesNotMatch(line, /[\r\n]/, `no bare CR or LF inside a reply line: ${JSON.stringify(line)}\n${context}`);
  }
}

const describePlan = (plan: Stream) =>
  JSON.stringify({
    ...plan,
    pieces: plan.pieces.map((p) => (p.bytes.length > 300 ? `<${p.bytes.length} bytes>` : p.bytes.toString('latin1'))),
  });

describe('fuzzing the inbound SMTP server with random and malformed command streams', { timeout: 180_000 }, () => {
  let exchange: ServiceUnderTest;
  let port: number;
  /** Every envelope id the server acknowledged with 250, over all cases. */
  const acknowledged = new Set<string>();

  before(async () => {
    exchange = await startQuietExchange({
      SMTP_MAX_MESSAGE_SIZE: String(MAX_SIZE),
      SMTP_MAX_RECIPIENTS: String(MAX_RECIPIENTS),
    });
    port = exchangeSmtpPort(exchange);
  });
  after(async () => {
    await exchange?.stop();
  });

  it('answers only proper SMTP replies, stores exactly the messages it answered 250, and keeps serving', async () => {
    let streams = 0;
    await fuzz('smtp command streams', fc.array(stream, { minLength: 4, maxLength: 8 }), 70, async (plans) => {
      const results = await Promise.all(plans.map((plan) => play(port, plan)));
      results.forEach(({ received }, i) => {
        assertReplies(received, describePlan(plans[i]!));
        for (const line of received.split('\r\n')) {
          const id = queuedId(line);
          if (id) acknowledged.add(id);
        }
      });
      streams += plans.length;
      await assertStoredExactly(exchange, acknowledged, 'after a batch of fuzzed streams');
    });
    assert.ok(streams >= 280, `ran ${streams} streams`);
    // Some of the noise carried whole transactions: the invariant above was not checked on nothing.
    assert.ok(acknowledged.size > 100, `the fuzzed streams had ${acknowledged.size} messages accepted`);

    const reply = await sendOrdinaryMessage(port);
    const id = queuedId(reply);
    assert.ok(id, `an ordinary message is still taken: ${reply}`);
    acknowledged.add(id);
    assert.match((await readPayload(exchange, id)).toString('latin1'), /Subject: still here\r\n\r\nHello\.\r\n$/);
    await assertStoredExactly(exchange, acknowledged, 'after the ordinary message');
    assert.equal((await fetch(`${exchange.url}/healthz`)).status, 200);
  });

  it('answers every command pipelined after two messages sent in one write', async () => {
    // The first bug this fuzzing found: smtp-server lost its continuation when the commands pipelined
    // after one message completed another in the same call, and the connection stopped answering.
    const message = (n: number) =>
      `MAIL FROM:<a@example.com>\r\nRCPT TO:<b@example.com>\r\nDATA\r\nSubject: ${n}\r\n\r\nbody ${n}\r\n.\r\n`;
    const { received } = await play(port, {
      earlyTalk: false,
      pieces: [
        { bytes: Buffer.from(`EHLO pipelining.test\r\n${message(1)}${message(2)}${message(3)}NOOP\r\n`), pause: false },
      ],
      ending: 'graceful',
    });
    assertReplies(received, 'three pipelined messages');
    const ids = received
      .split('\r\n')
      .map(queuedId)
      .filter((id): id is string => id !== undefined);
    assert.equal(ids.length, 3, received);
    assert.match(
      received,
      /queued as [\s\S]*\r\n250 2\.0\.0 OK\r\n[\s\S]*\r\n221 [^\r\n]*\r\n$/,
      'NOOP and QUIT after the messages are answered',
    );
    for (const id of ids) acknowledged.add(id);
    await assertStoredExactly(exchange, acknowledged);
  });
});
