import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  assertStoredExactly,
  dotStuffed,
  withCrlf,
  exchangeSmtpPort,
  queuedId,
  readPayload,
  sendOrdinaryMessage,
  startQuietExchange,
  storedAs,
} from '../support/exchange-fuzz.ts';
import { assertErrorObject, fetchWithin, fuzz, readBody } from '../support/fuzz.ts';
import { postSeal, rawMessage, startSealOnStandIn, startStandIn, type StandIn } from '../support/seal.ts';
import type { ServiceUnderTest } from '../support/services.ts';
import { SmtpTalk } from '../support/smtp-talk.ts';

const MAX_SIZE = 96 * 1024;

// ---- Random MIME: headers real and invented, encoded words, RFC 2231 parameters, nested multiparts
// with missing or wrong boundaries, broken transfer encodings, 8-bit and NUL bytes, LF and CRLF. ----

const eol = fc.constantFrom('\r\n', '\r\n', '\r\n', '\n');
const latin1 = (maxLength: number) =>
  fc.string({ unit: 'binary', maxLength }).map((text) => Buffer.from(text, 'latin1'));
const utf8 = (maxLength: number) => fc.string({ maxLength }).map((text) => Buffer.from(text, 'utf8'));
const boundaryText = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9'()+_,./:=? -]{0,72}$/),
  fc.constantFrom('', '--', 'a"b', 'x\r\ny', ' '),
);

const headerName = fc.oneof(
  fc.constantFrom(
    'From',
    'To',
    'Cc',
    'Bcc',
    'Subject',
    'Date',
    'Message-ID',
    'MIME-Version',
    'Content-Type',
    'Content-Transfer-Encoding',
    'Content-Disposition',
    'Reply-To',
    'References',
    'In-Reply-To',
    'X-Sealpost-Mobile',
    'Received',
    'Return-Path',
    'Sender',
    'Content-ID',
  ),
  fc.stringMatching(/^[\x21-\x39\x3b-\x7e]{1,30}$/),
);
const headerValue: fc.Arbitrary<Buffer> = fc.oneof(
  utf8(100),
  latin1(100),
  fc
    .tuple(
      fc.constantFrom('utf-8', 'UTF-8', 'iso-8859-1', 'x-unknown', '', 'utf-16'),
      fc.constantFrom('B', 'Q', 'b', 'X'),
      fc.string({ maxLength: 40 }),
    )
    .map(([charset, encoding, text]) =>
      Buffer.from(`=?${charset}?${encoding}?${text}?= =?utf-8?Q?=0D=0AX-Injected:_1?=`),
    ),
  fc
    .array(
      fc.oneof(
        fc.emailAddress(),
        fc.constantFrom(
          '"Name, With" <a@example.com>',
          'group: a@example.com, b@example.com;',
          '<>',
          '@',
          'ü@exämple.com',
        ),
      ),
      { maxLength: 5 },
    )
    .map((list) => Buffer.from(list.join(', '))),
  fc
    .tuple(
      fc.constantFrom(
        'multipart/mixed',
        'multipart/alternative',
        'text/plain',
        'text/html',
        'message/rfc822',
        'application/octet-stream',
        'multipart/',
      ),
      boundaryText,
    )
    .map(([type, boundary]) =>
      Buffer.from(`${type}; boundary="${boundary}"; charset=utf-8; name*0*=utf-8''%0D%0A%22; name*1="x.exe"`),
    ),
  fc
    .tuple(fc.emailAddress(), fc.constantFrom('+41791234567', '+1', 'not a number', '', '+41 79 123 45 67'))
    .map(([email, mobile]) => Buffer.from(`${email}=${mobile}`)),
  fc.integer({ min: 1000, max: 40_000 }).map((n) => Buffer.alloc(n, 'h')),
);
/** One header field: sometimes folded, sometimes without its colon. */
const headerField = fc
  .tuple(
    headerName,
    headerValue,
    eol,
    fc.constantFrom(': ', ':', ' : ', ''),
    fc.option(fc.nat(200), { nil: undefined }),
  )
  .map(([name, value, end, colon, foldAt]) => {
    const line = Buffer.concat([Buffer.from(name + colon), value]);
    const folded =
      foldAt !== undefined && foldAt < line.length
        ? Buffer.concat([line.subarray(0, foldAt), Buffer.from(`${end} `), line.subarray(foldAt)])
        : line;
    return Buffer.concat([folded, Buffer.from(end)]);
  });
const bodyBytes: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 2000 }).map((bytes) => Buffer.from(bytes)),
  utf8(500),
  fc.base64String({ maxLength: 400 }).map((text) => Buffer.from(`${text}\r\n!!not base64!!\r\n`)),
  fc
    .string({ unit: fc.constantFrom('=', '0', 'D', 'A', 'G', '\r\n', '.', ' ', '\t', 'x'), maxLength: 200 })
    .map((text) => Buffer.from(text)),
);

const { entity } = fc.letrec<{ entity: Buffer; leaf: Buffer; multipart: Buffer }>((tie) => ({
  entity: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('multipart')),
  leaf: fc
    .tuple(fc.array(headerField, { maxLength: 4 }), eol, bodyBytes)
    .map(([headers, end, body]) => Buffer.concat([...headers, Buffer.from(end), body])),
  multipart: fc
    .tuple(
      fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/),
      fc.array(tie('entity'), { maxLength: 4 }),
      eol,
      fc.constantFrom('closed', 'closed', 'unclosed', 'wrong'),
      bodyBytes,
    )
    .map(([boundary, parts, end, closing, preamble]) =>
      Buffer.concat([
        Buffer.from(`Content-Type: multipart/mixed; boundary="${boundary}"${end}${end}`),
        preamble,
        ...parts.flatMap((part) => [Buffer.from(`${end}--${boundary}${end}`), part]),
        Buffer.from(
          closing === 'closed'
            ? `${end}--${boundary}--${end}`
            : closing === 'wrong'
              ? `${end}--${boundary}x--${end}`
              : '',
        ),
      ]),
    ),
}));

/** A whole message: optional From/To in front, random fields, a body that may be MIME at any depth. */
const mimeMessage: fc.Arbitrary<Buffer> = fc
  .tuple(fc.boolean(), fc.array(headerField, { maxLength: 12 }), fc.oneof(entity, bodyBytes), eol, fc.boolean())
  .map(([addressed, fields, body, end, separated]) =>
    Buffer.concat([
      Buffer.from(addressed ? `From: a@example.com${end}To: b@example.com${end}` : ''),
      ...fields,
      Buffer.from(separated ? end : ''),
      body,
    ]),
  );

/** What POST /v1/messages takes as `raw`: a message that starts with a header field name and a colon. */
const looksLikeMessage = (raw: Buffer) => /^[\x21-\x39\x3b-\x7e]+:/.test(raw.subarray(0, 1000).toString('latin1'));

describe('fuzzing with random MIME bodies: SMTP, POST /v1/messages raw, and the seal service that parses them', {
  timeout: 180_000,
}, () => {
  let exchange: ServiceUnderTest;
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  let talk: SmtpTalk;
  const acknowledged = new Set<string>();
  const tally = { smtpStored: 0, smtpTooLarge: 0, jsonStored: 0, jsonRefused: 0, sealed: 0, sealRefused: 0 };

  before(async () => {
    exchange = await startQuietExchange({ SMTP_MAX_MESSAGE_SIZE: String(MAX_SIZE) });
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn, { SEAL_MAX_MESSAGE_SIZE: String(MAX_SIZE) });
    talk = await openSession();
  });
  after(async () => {
    talk?.close();
    await seal?.stop();
    await standIn?.close();
    await exchange?.stop();
  });

  /** One SMTP session for all cases (the server's greeting delay is paid once). */
  async function openSession(): Promise<SmtpTalk> {
    const opened = await SmtpTalk.open(exchangeSmtpPort(exchange));
    assert.match(await opened.talk.send('EHLO mime.fuzz'), /^250[ -]/);
    return opened.talk;
  }

  async function overSmtp(message: Buffer, context: string): Promise<void> {
    assert.match(await talk.send('MAIL FROM:<a@example.com>'), /^250 /, context);
    assert.match(await talk.send('RCPT TO:<b@example.com>'), /^250 /, context);
    assert.match(await talk.send('DATA'), /^354 /, context);
    talk.write(dotStuffed(message));
    const reply = await talk.reply();
    const id = queuedId(reply);
    if (message.length > MAX_SIZE) {
      assert.match(reply, /^552 5\.3\.4 /, `over the size limit: ${reply}\n${context}`);
      tally.smtpTooLarge++;
      return;
    }
    assert.ok(id, `stored with 250: ${reply}\n${context}`);
    acknowledged.add(id);
    tally.smtpStored++;
    // Our Received header, then the message byte for byte. (A message whose first line starts with white
    // space reads as a continuation of that header: garbage in, kept as it came.)
    const stored = await readPayload(exchange, id);
    const expected = storedAs(message);
    const trace = stored.subarray(0, stored.length - expected.length).toString('latin1');
    assert.ok(stored.subarray(stored.length - expected.length).equals(expected), `stored byte for byte\n${context}`);
    assert.match(trace, /^Received: [\s\S]*\r\n$/, context);
    assert.ok(!trace.includes('\r\n\r\n'), context);
  }

  async function overJson(message: Buffer, context: string): Promise<void> {
    const response = await fetchWithin(`${exchange.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${exchange.serviceToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'a@example.com', to: ['b@example.com'], raw: message.toString('base64') }),
    });
    const body = await readBody(response);
    if (response.status === 202) {
      assert.ok(
        looksLikeMessage(message) && message.length <= MAX_SIZE,
        `accepted only a message within the rules\n${context}`,
      );
      const { id } = body as { id: string };
      acknowledged.add(id);
      tally.jsonStored++;
      assert.ok(
        (await readPayload(exchange, id)).equals(withCrlf(message)),
        `stored unchanged but for CRLF line ends\n${context}`,
      );
      return;
    }
    assertErrorObject(response.status, body, context);
    assert.equal(response.status, looksLikeMessage(message) ? 413 : 400, `refused for the right reason\n${context}`);
    tally.jsonRefused++;
  }

  async function toSeal(message: Buffer, context: string): Promise<void> {
    const response = await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, message, {
      envelopeRecipients: 'c@example.com',
    });
    const body = await readBody(response);
    if (response.status === 201) {
      tally.sealed++;
      const { id } = body as { id: string };
      const content = await fetchWithin(`${seal.url}/v1/sealed/${id}/content`, {
        headers: { authorization: `Bearer ${seal.serviceToken}` },
      });
      assert.equal(content.status, 200, context);
      assert.ok(Buffer.from(await content.arrayBuffer()).equals(message), `reads back byte for byte\n${context}`);
      return;
    }
    assertErrorObject(response.status, body, context);
    assert.ok([400, 413].includes(response.status), `a clean refusal, not ${response.status}\n${context}`);
    tally.sealRefused++;
  }

  it('stores or refuses every message cleanly on each door, never crashing or keeping a refused one', async () => {
    await fuzz('mime bodies', mimeMessage, 200, async (message) => {
      const context = `message (${message.length} bytes): ${JSON.stringify(message.toString('latin1').slice(0, 1500))}`;
      await overSmtp(message, context);
      await overJson(message, context);
      await toSeal(message, context);
    });
    await assertStoredExactly(exchange, acknowledged);
    // The generator reached each outcome; a generator that only made refusals would prove little.
    assert.ok(tally.smtpStored > 100 && tally.jsonStored > 50 && tally.sealed > 30, JSON.stringify(tally));
    assert.ok(tally.jsonRefused > 10 && tally.sealRefused > 10, JSON.stringify(tally));

    // Both still serve an ordinary message.
    assert.ok(queuedId(await sendOrdinaryMessage(exchangeSmtpPort(exchange))));
    assert.equal((await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, rawMessage())).status, 201);
  });
});
