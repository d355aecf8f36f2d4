import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import { RECENT_PAYLOAD_MAX } from '../recent-payloads.ts';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import { exchangeDb, settled } from '../../../test/support/exchange-delivery.ts';
import { startSealStandIn } from '../../../test/support/exchange-seal-stand-in.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { startSmtpSink, type SinkMessage, type SmtpSink } from '../../../test/support/smtp-sink.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';

const smtpPort = (service: ServiceUnderTest) => Number(new URL(service.service.listening.smtp!).port);
const HOSTNAME = 'mx.sealpost.test';

/** Every line of a message, its CRLF left out, is at most 998 octets (RFC 5322 §2.1.1). */
function longestLine(raw: Buffer): number {
  return Math.max(
    ...raw
      .toString('latin1')
      .split('\r\n')
      .map((line) => line.length),
  );
}

/**
 * What leaves the exchange by the smtp strategy, read at a real SMTP relay: lines within RFC 5322's 998
 * octets with the content intact, 8-bit content declared whether or not the client did, no Bcc field
 * (relayed or sealed), the envelope as received (quoted local parts too), and SMTP_HOSTNAME in EHLO.
 */
describe('relayed mail within the RFCs', { timeout: 180_000 }, () => {
  let s3: S3TestServer;
  let seal: Awaited<ReturnType<typeof startSealStandIn>>;

  before(async () => {
    [s3, seal] = await Promise.all([startS3Server(), startSealStandIn()]);
  });
  after(async () => {
    seal?.server?.close();
    await s3?.stop();
  });

  async function exchangeTo(sink: SmtpSink, options: { alsoSeal?: boolean } = {}): Promise<ServiceUnderTest> {
    const exchange = await startServiceForTest(exchangeService, {
      s3,
      env: {
        OUTBOUND_SMTP_URL: sink.url,
        SEAL_URL: seal.url,
        SMTP_HOSTNAME: HOSTNAME,
        DELIVERY_POLL_INTERVAL: '25ms',
        DELIVERY_RETRY_BASE: '100ms',
      },
    });
    await new RuleStore(exchangeDb(exchange)).create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: options.alsoSeal ? ['smtp', 'seal'] : ['smtp'] },
    });
    return exchange;
  }

  /** One message over a raw SMTP session; its envelope id once the server said 250. */
  async function submit(
    exchange: ServiceUnderTest,
    data: string | Buffer,
    options: { mailFrom?: string; to?: string[]; params?: string } = {},
  ): Promise<string> {
    const { talk } = await SmtpTalk.open(smtpPort(exchange));
    try {
      assert.match(await talk.send('EHLO client.example'), /^250/);
      const from = options.mailFrom ?? 'dana@sender.example';
      assert.match(await talk.send(`MAIL FROM:<${from}>${options.params ?? ''}`), /^250/);
      for (const to of options.to ?? ['erin@rcpt.example']) assert.match(await talk.send(`RCPT TO:<${to}>`), /^250/);
      assert.match(await talk.send('DATA'), /^354/);
      talk.write(data);
      const done = await talk.send('.');
      assert.match(done, /^250/, done);
      return /queued as ([0-9a-f-]{36})/i.exec(done)![1]!;
    } finally {
      await talk.send('QUIT').catch(() => '');
    }
  }

  /** The relayed message (from the sender, not a notification or a bounce) with this subject. */
  const arrived = async (sink: SmtpSink, subject: string): Promise<SinkMessage> => {
    const find = () =>
      sink.messages.find(
        (m) => m.from === 'dana@sender.example' && m.raw.toString('latin1').includes(`Subject: ${subject}`),
      );
    await sink.waitUntil(() => find() !== undefined, 20_000, `"${subject}" at the sink`);
    return find()!;
  };

  const stored = async (exchange: ServiceUnderTest, envelopeId: string) =>
    exchangeDb(exchange)
      .selectFrom('envelopes')
      .select(['body_8bitmime', 'long_lines'])
      .where('id', '=', envelopeId)
      .executeTakeFirstOrThrow();

  it('relays a 2,000-octet line as lines of at most 998 octets, content intact, EHLO as SMTP_HOSTNAME', async () => {
    const sink = await startSmtpSink();
    const exchange = await exchangeTo(sink);
    try {
      const longText = Array.from({ length: 200 }, (_, i) => `word${i % 10}`).join(' ') + 'x'.repeat(800);
      const binary = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) % 256));
      const longSubject = Array.from({ length: 150 }, (_, i) => `subject${i}`).join(' ');
      const data = [
        'From: dana@sender.example',
        'To: erin@rcpt.example',
        `Subject: long lines ${longSubject}`,
        'Date: Tue, 24 Nov 2026 10:00:00 +0000',
        'Message-ID: <long@sender.example>',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=us-ascii',
        '',
        'A short line.',
        longText,
        'The end.',
        '--b1',
        'Content-Type: application/octet-stream',
        'Content-Transfer-Encoding: base64',
        '',
        // One base64 line of 4,000 octets, as some clients write it.
        binary.toString('base64'),
        '--b1',
        'Content-Type: text/plain; charset=us-ascii',
        '',
        'A part with nothing to change.',
        '--b1--',
        '',
      ].join('\r\n');
      assert.ok(longText.length > 1900 && longText.length < 2100);
      const envelopeId = await submit(exchange, data);
      assert.deepEqual(await stored(exchange, envelopeId), { body_8bitmime: false, long_lines: true });
      const received = await arrived(sink, 'long lines');
      assert.ok(longestLine(received.raw) <= 998, `the longest line has ${longestLine(received.raw)} octets`);
      const parsed = await simpleParser(received.raw);
      assert.equal(parsed.subject, `long lines ${longSubject}`, 'the folded Subject reads as it was');
      assert.ok(parsed.text?.includes(`A short line.\n${longText}\nThe end.`), 'the long line is whole once decoded');
      const attachment = parsed.attachments.find((a) => a.contentType === 'application/octet-stream');
      assert.ok(attachment?.content.equals(binary), 'the base64 part decodes to the same bytes');
      assert.match(received.raw.toString(), /\r\n\r\nA part with nothing to change\.\r\n--b1--/);
      assert.equal(received.helo, HOSTNAME, 'EHLO names SMTP_HOSTNAME');

      // A message without long lines is relayed as it came (after our Received line).
      const plain =
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: short lines\r\n' +
        `Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <short@sender.example>\r\n\r\n${'y'.repeat(998)}\r\n`;
      const plainId = await submit(exchange, plain);
      assert.deepEqual(await stored(exchange, plainId), { body_8bitmime: false, long_lines: false });
      assert.ok((await arrived(sink, 'short lines')).raw.toString().endsWith(plain));
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('re-encodes a long line in a message too large to hold, streamed into the store', async () => {
    const sink = await startSmtpSink();
    const exchange = await exchangeTo(sink);
    try {
      const filler = Array.from({ length: Math.ceil(RECENT_PAYLOAD_MAX / 70) + 10 }, (_, i) =>
        `line ${i}`.padEnd(70, '.'),
      );
      const longLine = 'z'.repeat(2000);
      const data =
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: large and long\r\n' +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <large@sender.example>\r\n\r\n' +
        `${filler.join('\r\n')}\r\n${longLine}\r\n`;
      assert.ok(data.length > RECENT_PAYLOAD_MAX);
      const envelopeId = await submit(exchange, data);
      assert.deepEqual(await stored(exchange, envelopeId), { body_8bitmime: false, long_lines: true });
      const received = await arrived(sink, 'large and long');
      assert.ok(longestLine(received.raw) <= 998);
      const parsed = await simpleParser(received.raw);
      assert.equal(parsed.text, `${filler.join('\n')}\n${longLine}\n`);
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('bounces a header line over 998 octets that has no whitespace to fold at, saying so', async () => {
    const sink = await startSmtpSink();
    const exchange = await exchangeTo(sink);
    try {
      const data =
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: unfoldable\r\n' +
        `X-Token: ${'t'.repeat(1500)}\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\n\r\nHello\r\n`;
      const envelopeId = await submit(exchange, data);
      const history = await settled(exchange, envelopeId, 'failed');
      assert.match(
        history.find((row) => row.status === 'failed')!.detail!,
        /header line \(X-Token\) over 998 octets without whitespace to fold it at/,
      );
      await sink.waitUntil(() => sink.messages.some((m) => m.from === ''), 20_000, 'the bounce');
      assert.match(sink.messages.find((m) => m.from === '')!.raw.toString(), /Status: 5\.6\.0/);
      assert.equal(sink.messages.filter((m) => m.from !== '').length, 0, 'the message did not go out');
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('declares BODY=8BITMIME for 8-bit content without BODY=, or re-encodes it for a relay lacking it', async () => {
    const sink = await startSmtpSink();
    const old = await startSmtpSink({ hide8BITMIME: true });
    const exchange = await exchangeTo(sink);
    const toOld = await exchangeTo(old);
    try {
      const data = (subject: string) =>
        `From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: ${subject}\r\n` +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n' +
        'Content-Type: text/plain; charset=utf-8\r\n\r\nGrüße aus Zürich\r\n';
      const envelopeId = await submit(exchange, Buffer.from(data('undeclared')));
      assert.deepEqual(await stored(exchange, envelopeId), { body_8bitmime: true, long_lines: false });
      const received = await arrived(sink, 'undeclared');
      assert.equal(received.mailFromArgs.BODY, '8BITMIME');
      assert.ok(received.raw.toString('utf8').endsWith(data('undeclared')), 'the bytes as they came');

      // Declared 7BIT, yet 8-bit: accepted and flagged as Postfix does.
      const sevenId = await submit(exchange, Buffer.from(data('declared 7bit')), { params: ' BODY=7BIT' });
      assert.equal((await stored(exchange, sevenId)).body_8bitmime, true);
      assert.equal((await arrived(sink, 'declared 7bit')).mailFromArgs.BODY, '8BITMIME');

      await submit(toOld, Buffer.from(data('to an old relay')));
      const downgraded = await arrived(old, 'to an old relay');
      assert.equal(downgraded.mailFromArgs.BODY, undefined);
      assert.ok(!downgraded.raw.some((byte) => byte >= 0x80), 'nothing 8-bit reaches a relay without 8BITMIME');
      assert.equal((await simpleParser(downgraded.raw)).text, 'Grüße aus Zürich\n');
    } finally {
      await Promise.all([exchange.stop(), toOld.stop()]);
      await Promise.all([sink.close(), old.close()]);
    }
  });

  it('removes Bcc from what is relayed and sealed, small or streamed; its recipients still get it', async () => {
    const sink = await startSmtpSink();
    const exchange = await exchangeTo(sink, { alsoSeal: true });
    try {
      for (const [subject, filler] of [
        ['blind small', 'Hello'],
        [
          'blind large',
          'x'
            .repeat(70)
            .concat('\r\n')
            .repeat(Math.ceil(RECENT_PAYLOAD_MAX / 72) + 10),
        ],
      ] as const) {
        const data =
          'From: dana@sender.example\r\nTo: erin@rcpt.example\r\n' +
          'Bcc: hidden@rcpt.example,\r\n secret@rcpt.example\r\n' +
          `Subject: ${subject}\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\n` +
          `bcc: lower@rcpt.example\r\n\r\n${filler}\r\n`;
        const envelopeId = await submit(exchange, data, {
          to: ['erin@rcpt.example', 'hidden@rcpt.example', 'secret@rcpt.example', 'lower@rcpt.example'],
        });
        await settled(exchange, envelopeId, 'delivered');
        const relayed = await arrived(sink, subject);
        assert.deepEqual(relayed.to.sort(), [
          'erin@rcpt.example',
          'hidden@rcpt.example',
          'lower@rcpt.example',
          'secret@rcpt.example',
        ]);
        const sealed = seal.calls.find((call) => call.headers['x-sealpost-envelope-id'] === envelopeId)!.body;
        for (const [what, raw] of [
          ['relayed', relayed.raw],
          ['sealed', sealed],
        ] as const) {
          const text = raw.toString('latin1');
          assert.doesNotMatch(text, /^bcc:/im, `no Bcc field ${what}`);
          assert.doesNotMatch(text, /secret@|hidden@|lower@/, `no blind recipient named ${what}`);
          assert.match(text, new RegExp(`\r\nSubject: ${subject}\r\nDate: [^\r]+\r\n\r\n`));
          assert.ok(text.endsWith(`\r\n\r\n${filler}\r\n`), `the body ${what} as it was`);
        }
      }
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('relays a quoted local part with an escaped quote as it was received', async () => {
    const sink = await startSmtpSink();
    const exchange = await exchangeTo(sink);
    try {
      const envelopeId = await submit(
        exchange,
        'From: dana@sender.example\r\nTo: "we\\"ird"@rcpt.example\r\nSubject: quoted\r\n\r\nHello\r\n',
        { to: ['"we\\"ird"@rcpt.example', '"back\\\\slash"@rcpt.example'] },
      );
      const envelope = await exchangeDb(exchange)
        .selectFrom('envelopes')
        .select('recipients')
        .where('id', '=', envelopeId)
        .executeTakeFirstOrThrow();
      assert.deepEqual(envelope.recipients, ['"we\\"ird"@rcpt.example', '"back\\\\slash"@rcpt.example']);
      const received = await arrived(sink, 'quoted');
      assert.deepEqual(received.to, ['"we\\"ird"@rcpt.example', '"back\\\\slash"@rcpt.example']);
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });
});
