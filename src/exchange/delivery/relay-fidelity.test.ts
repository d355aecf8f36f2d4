import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
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

/**
 * What the relay receives by the smtp strategy, read as bytes at the sink: the MAIL FROM parameters of the
 * inbound transaction declared again, a 7-bit re-encoding (or a bounce that says why not) for a relay
 * without 8BITMIME, Date and Message-ID added when missing, one rule for line ends on both paths, and
 * the bounce's returned headers as they were.
 */
describe('fidelity of the smtp strategy', () => {
  let s3: S3TestServer;
  let seal: Awaited<ReturnType<typeof startSealStandIn>>;

  before(async () => {
    [s3, seal] = await Promise.all([startS3Server(), startSealStandIn()]);
  });
  after(async () => {
    seal?.server?.close();
    await s3?.stop();
  });

  /** An exchange relaying SMTP mail (and sealing it too, with `alsoSeal`) to `sink`. */
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

  /** One message over a raw SMTP session; resolves with its envelope id once the server said 250. */
  async function submit(exchange: ServiceUnderTest, mailFrom: string, data: string): Promise<string> {
    const { talk } = await SmtpTalk.open(smtpPort(exchange));
    try {
      assert.match(await talk.send('EHLO client.example'), /^250/);
      assert.match(await talk.send(`MAIL FROM:<dana@sender.example>${mailFrom}`), /^250/);
      assert.match(await talk.send('RCPT TO:<erin@rcpt.example>'), /^250/);
      assert.match(await talk.send('DATA'), /^354/);
      // The data ends with its last line's CRLF; the lone dot follows.
      const done = await talk.send(`${data}.`);
      assert.match(done, /^250/, done);
      return /queued as ([0-9a-f-]{36})/i.exec(done)?.[1] ?? /([0-9a-f]{8}-[0-9a-f-]{27})/.exec(done)![1]!;
    } finally {
      await talk.send('QUIT').catch(() => '');
    }
  }

  const arrived = async (sink: SmtpSink, subject: string): Promise<SinkMessage> => {
    await sink.waitUntil(
      () => sink.messages.some((m) => m.raw.includes(`Subject: ${subject}`)),
      20_000,
      `"${subject}" at the sink`,
    );
    return sink.messages.find((m) => m.raw.includes(`Subject: ${subject}`))!;
  };

  it('declares BODY=8BITMIME and SMTPUTF8 to the relay if the client did, relaying the bytes unchanged', async () => {
    const sink = await startSmtpSink();
    const exchange = await exchangeTo(sink);
    try {
      const data =
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: Grüße 8bit\r\n' +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <eight@sender.example>\r\n\r\nGrüße aus Zürich\r\n';
      await submit(exchange, ' BODY=8BITMIME SMTPUTF8', data);
      const received = await arrived(sink, 'Grüße 8bit');
      assert.equal(received.mailFromArgs.BODY, '8BITMIME');
      assert.equal(received.mailFromArgs.SMTPUTF8, true);
      assert.ok(received.raw.toString('utf8').endsWith(data), 'the message as it was sent, after our Received line');

      const plain =
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: plain 7bit\r\n' +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <seven@sender.example>\r\n\r\nHello\r\n';
      await submit(exchange, '', plain);
      const seven = await arrived(sink, 'plain 7bit');
      assert.equal(seven.mailFromArgs.BODY, undefined, 'a 7-bit message is not declared 8-bit');
      assert.equal(seven.mailFromArgs.SMTPUTF8, undefined);
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('re-encodes an 8-bit message to quoted-printable for a relay without 8BITMIME, the text unchanged', async () => {
    const sink = await startSmtpSink({ hide8BITMIME: true });
    const exchange = await exchangeTo(sink);
    try {
      const data = [
        'From: dana@sender.example',
        'To: erin@rcpt.example',
        'Subject: downgraded',
        'Date: Tue, 24 Nov 2026 10:00:00 +0000',
        'Message-ID: <down@sender.example>',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: 8bit',
        '',
        `Grüße aus Zürich, ${'é'.repeat(60)}`,
        '--b1',
        'Content-Type: application/octet-stream',
        '',
        'bin\u00ffary',
        '--b1--',
        '',
      ].join('\r\n');
      const envelopeId = await submit(exchange, ' BODY=8BITMIME', data);
      const received = await arrived(sink, 'downgraded');
      assert.equal(received.mailFromArgs.BODY, undefined, 'no BODY=8BITMIME to a relay that does not offer it');
      assert.ok(!received.raw.some((byte) => byte >= 0x80), 'nothing 8-bit reaches the relay');
      const parsed = await simpleParser(received.raw);
      assert.equal(parsed.text?.trim(), `Grüße aus Zürich, ${'é'.repeat(60)}`);
      assert.match(received.raw.toString(), /Content-Transfer-Encoding: quoted-printable\r\n\r\nGr=C3=BC=C3=9Fe/);
      assert.ok(
        parsed.attachments[0]!.content.equals(Buffer.from('bin\u00ffary', 'utf8')),
        'the binary part arrives as it was (base64)',
      );
      const history = await settled(exchange, envelopeId, 'delivered');
      assert.match(history.at(-1)!.detail!, /re-encoded to 7-bit/);
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('bounces, saying why, what cannot reach a relay without 8BITMIME or SMTPUTF8', async () => {
    const sink = await startSmtpSink({ hide8BITMIME: true, hideSMTPUTF8: true });
    const exchange = await exchangeTo(sink);
    try {
      const embedded =
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: forwarded\r\n' +
        'MIME-Version: 1.0\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\nGrüße\r\n';
      const first = await submit(exchange, ' BODY=8BITMIME', embedded);
      const utf8 = 'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: Grüße im Betreff\r\n\r\nHallo\r\n';
      const second = await submit(exchange, ' BODY=8BITMIME SMTPUTF8', utf8);
      for (const [envelopeId, why] of [
        [first, /does not offer 8BITMIME .*message\/rfc822 part with 8-bit content/],
        [second, /does not offer SMTPUTF8/],
      ] as const) {
        const history = await settled(exchange, envelopeId, 'failed');
        assert.match(history.find((row) => row.status === 'failed')!.detail!, why);
      }
      await sink.waitUntil(() => sink.messages.filter((m) => m.from === '').length === 2, 20_000, 'two bounces');
      const bounces = sink.messages.filter((m) => m.from === '').map((m) => m.raw.toString());
      assert.ok(
        bounces.some((b) => /Status: 5\.6\.3[\s\S]*8BITMIME/.test(b)),
        'the 8BITMIME bounce says why',
      );
      assert.ok(
        bounces.some((b) => /Status: 5\.6\.7[\s\S]*SMTPUTF8/.test(b)),
        'the SMTPUTF8 bounce says why',
      );
      assert.equal(sink.messages.filter((m) => m.from !== '').length, 0, 'neither message reached the relay');
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('adds Date and Message-ID if missing, the same Message-ID on retry; keeps those a message has', async () => {
    const sink = await startSmtpSink();
    const refused: SinkMessage[] = [];
    // The first attempt is refused at the end of DATA (after the sink has read it), the second taken.
    sink.refuseData = (message) => {
      if (!message.raw.includes('Subject: no date') || refused.length > 0) return undefined;
      refused.push(message);
      return { code: 451, text: '4.3.0 try again' };
    };
    const exchange = await exchangeTo(sink);
    try {
      const envelopeId = await submit(
        exchange,
        '',
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: no date\r\n\r\nHello\r\n',
      );
      const received = await arrived(sink, 'no date');
      const head = received.raw.toString().split('\r\n\r\n')[0]!;
      assert.match(head, new RegExp(`^Message-ID: <${envelopeId}@${HOSTNAME.replaceAll('.', '\\.')}>$`, 'm'));
      const date = /^Date: (.+)$/m.exec(head)?.[1];
      assert.ok(date && Math.abs(Date.parse(date) - Date.now()) < 120_000, `a Date of the acceptance: ${date}`);
      assert.equal(refused.length, 1);
      assert.equal(refused[0]!.messageId, `<${envelopeId}@${HOSTNAME}>`, 'the retry carries the same Message-ID');

      await submit(
        exchange,
        '',
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: has both\r\n' +
          'Date: Mon, 23 Nov 2026 08:00:00 +0100\r\nMessage-ID: <own@sender.example>\r\n\r\nHello\r\n',
      );
      const own = (await arrived(sink, 'has both')).raw.toString();
      assert.equal(own.match(/^Date:/gm)?.length, 1);
      assert.equal(own.match(/^Message-ID:/gim)?.length, 1);
      assert.match(own, /^Message-ID: <own@sender\.example>$/m);
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('stores bare LF and CR as CRLF, so sealed and relayed bytes match (a dot after a bare LF kept)', async () => {
    const sink = await startSmtpSink();
    const exchange = await exchangeTo(sink, { alsoSeal: true });
    try {
      // Line ends as broken clients send them: bare LF, bare CR, and a dot-stuffed line after a bare LF
      // (stuffed, as a client that counts LF as a line end does) and a lone dot after one (not stuffed).
      const data =
        'From: dana@sender.example\nTo: erin@rcpt.example\r\nSubject: line ends\r' +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <ends@sender.example>\r\n\r\n' +
        'one\ntwo\rthree\n..four\n.five\r\n';
      const envelopeId = await submit(exchange, '', data);
      await settled(exchange, envelopeId, 'delivered');
      const relayed = (await arrived(sink, 'line ends')).raw;
      const sealed = seal.calls.find((call) => call.headers['x-sealpost-envelope-id'] === envelopeId)!.body;
      assert.ok(
        relayed.equals(sealed),
        'the relay and the seal service got the same bytes:\n' +
          `${JSON.stringify(relayed.toString())}\n${JSON.stringify(sealed.toString())}`,
      );
      const body = relayed.toString().split('\r\n\r\n').slice(1).join('\r\n\r\n');
      assert.equal(body, 'one\r\ntwo\r\nthree\r\n.four\r\n.five\r\n');
      assert.match(relayed.toString(), /\r\nSubject: line ends\r\nDate: /);
      assert.doesNotMatch(relayed.toString(), /[^\r]\n|\r[^\n]/, 'no bare LF or CR left');
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  it('bounces with the original headers as they were, 8-bit included, the relay as an address literal', async () => {
    const sink = await startSmtpSink({ failWith: (recipient) => (recipient.startsWith('erin@') ? 550 : undefined) });
    const exchange = await exchangeTo(sink);
    try {
      const longSubject = `Grüße ${'with a long subject line that goes on '.repeat(4)}`.trim();
      const original =
        `From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: ${longSubject}\r\n` +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <bounced@sender.example>\r\n';
      const envelopeId = await submit(exchange, ' BODY=8BITMIME SMTPUTF8', `${original}\r\nBody\r\n`);
      await settled(exchange, envelopeId, 'failed');
      await sink.waitUntil(() => sink.messages.some((m) => m.from === ''), 20_000, 'the bounce');
      const bounce = sink.messages.find((m) => m.from === '')!;
      const raw = bounce.raw.toString('utf8');
      // 8-bit headers go as message/global-headers (RFC 6533 §6.3), byte for byte.
      const part =
        /Content-Type: message\/global-headers\r\nContent-Transfer-Encoding: (\w+)\r\n\r\n([\s\S]*?)\r\n--/.exec(raw);
      assert.ok(part, raw);
      assert.equal(part[1], '8bit');
      assert.ok(part[2]!.includes(original), `the headers as they were, without soft breaks:\n${part[2]}`);
      assert.equal(bounce.mailFromArgs.BODY, '8BITMIME', 'the 8-bit bounce is declared so');
      assert.match(raw, /Remote-MTA: dns; \[127\.0\.0\.1\]/);
      assert.match(raw, new RegExp(`Reporting-MTA: dns; ${HOSTNAME.replaceAll('.', '\\.')}`));
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });
});
