import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import { eventually, exchangeDb, metric, settled, statusHistory } from '../../../test/support/exchange-delivery.ts';
import { startSealStandIn } from '../../../test/support/exchange-seal-stand-in.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { startSmtpSink, type SinkMessage, type SmtpSink } from '../../../test/support/smtp-sink.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';

const DOMAIN = 'example.org';
type KeyKind = 'rsa' | 'ed25519';

/**
 * Delivery reports as the relay receives them, from a real exchange to a real SMTP server on 127.0.0.1:
 * RFC 6533 reports for UTF-8 addresses and 7-bit RFC 3464 ones otherwise, re-encoded for a relay without
 * 8BITMIME and DKIM-signed over the bytes that arrive (RSA and Ed25519), and a bounce that cannot be
 * delivered sent on to BOUNCE_NOTICE_RECIPIENT, once.
 */
describe('delivery reports on the wire', () => {
  let dir: string;
  /** The DKIM TXT records the verifier looks up, by selector (one per key kind). */
  const records = new Map<string, string>();
  const keyFiles = new Map<KeyKind, string>();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-reports-'));
    for (const kind of ['rsa', 'ed25519'] as const) {
      const { privateKey, publicKey } =
        kind === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
      const file = join(dir, `${kind}.pem`);
      await writeFile(file, privateKey.export({ type: 'pkcs8', format: 'pem' }));
      keyFiles.set(kind, file);
      const der = publicKey.export({ type: 'spki', format: 'der' });
      // An Ed25519 record holds the raw 32-byte key (RFC 8463 §4.2), the end of its SPKI form.
      const p = (kind === 'ed25519' ? der.subarray(der.length - 32) : der).toString('base64');
      records.set(`${kind}._domainkey.${DOMAIN}`, `v=DKIM1; k=${kind}; p=${p}`);
    }
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** mailauth's verdicts on the bytes received, as `domain:result` per signature. */
  async function dkimResults(raw: Buffer): Promise<string[]> {
    const result = await dkimVerify(raw, {
      resolver: (async (name: string, type: string) => {
        const record = type === 'TXT' ? records.get(name.toLowerCase()) : undefined;
        if (record) return [[record]];
        throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
      }) as never,
    });
    return result.results.map(
      (r: { signingDomain: string; status: { result: string } }) => `${r.signingDomain}:${r.status.result}`,
    );
  }

  /** An exchange relaying SMTP mail to `relay` (none: the outbox), signing with the `key` kind's key. */
  async function exchangeWith(
    relay: SmtpSink | undefined,
    key: KeyKind,
    options: { outbound?: 'smtp' | 'seal'; env?: Record<string, string> } = {},
  ): Promise<ServiceUnderTest> {
    const exchange = await startServiceForTest(exchangeService, {
      env: {
        ...(relay ? { OUTBOUND_SMTP_URL: relay.url } : {}),
        SMTP_HOSTNAME: 'mx.sealpost.test',
        NOTIFY_FROM: `Sealpost <no-reply@${DOMAIN}>`,
        DKIM_DOMAIN: DOMAIN,
        DKIM_SELECTOR: key,
        DKIM_PRIVATE_KEY_FILE: keyFiles.get(key)!,
        DELIVERY_POLL_INTERVAL: '25ms',
        DELIVERY_RETRY_BASE: '100ms',
        LOG_LEVEL: 'info',
        ...options.env,
      },
    });
    await new RuleStore(exchangeDb(exchange)).create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: [options.outbound ?? 'smtp'] },
    });
    return exchange;
  }

  /** One message over a raw SMTP session; resolves with its envelope id once the server said 250. */
  async function submit(
    exchange: ServiceUnderTest,
    message: { from: string; to: string; params?: string; data: string },
  ): Promise<string> {
    const { talk } = await SmtpTalk.open(Number(new URL(exchange.service.listening.smtp!).port));
    try {
      assert.match(await talk.send('EHLO client.example'), /^250/);
      assert.match(await talk.send(`MAIL FROM:<${message.from}>${message.params ?? ''}`), /^250/);
      assert.match(await talk.send(`RCPT TO:<${message.to}>`), /^250/);
      assert.match(await talk.send('DATA'), /^354/);
      const done = await talk.send(`${message.data}.`);
      assert.match(done, /^250/, done);
      return /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/.exec(done)![1]!;
    } finally {
      await talk.send('QUIT').catch(() => '');
    }
  }

  /** The report from `<>` to `to` at the relay. */
  async function reportTo(sink: SmtpSink, to: string): Promise<SinkMessage> {
    const match = (m: SinkMessage) => m.from === '' && m.to.includes(to);
    await sink.waitUntil(() => sink.messages.some(match), 20_000, `the report to ${to}`);
    return sink.messages.find(match)!;
  }

  const reportType = (mail: ParsedMail) =>
    (mail.headers.get('content-type') as { params: Record<string, string> }).params['report-type'];
  const part = (mail: ParsedMail, type: string) => mail.attachments.find((a) => a.contentType === type);
  /** The raw text of a MIME part of a one-level multipart, from its Content-Type line to the next boundary. */
  const rawPart = (raw: Buffer, type: string) =>
    new RegExp(`\\r\\nContent-Type: ${type.replace('/', '\\/')}\\r\\n([\\s\\S]*?)\\r\\n--`).exec(
      raw.toString('latin1'),
    )?.[1];

  const utf8Original = (subject: string) =>
    `From: dana@sender.example\r\nTo: jörg@rcpt.example\r\nSubject: ${subject} – Grüße\r\n` +
    `Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <${subject}@sender.example>\r\n`;

  it('reports a UTF-8 recipient’s 550 as RFC 6533 says, and an ASCII one as a 7-bit RFC 3464 report', async () => {
    const sink = await startSmtpSink({ failWith: (rcpt) => (/^(jörg|erin)@/.test(rcpt) ? 550 : undefined) });
    const exchange = await exchangeWith(sink, 'rsa');
    try {
      const original = utf8Original('utf8-refused');
      await submit(exchange, {
        from: 'dana@sender.example',
        to: 'jörg@rcpt.example',
        params: ' BODY=8BITMIME SMTPUTF8',
        data: `${original}\r\nHallo Jörg\r\n`,
      });
      const global = await reportTo(sink, 'dana@sender.example');
      const mail = await simpleParser(global.raw);
      assert.equal(reportType(mail), 'global-delivery-status');
      assert.deepEqual(
        mail.attachments.map((a) => a.contentType),
        ['message/global-delivery-status', 'message/global-headers'],
      );
      const status = part(mail, 'message/global-delivery-status')!.content.toString('utf8');
      assert.match(status, /^Final-Recipient: utf-8; jörg@rcpt\.example\r$/m, status);
      assert.match(status, /^Action: failed\r$/m);
      assert.match(status, /^Status: 5\.1\.1\r$/m);
      assert.match(status, /^Reporting-MTA: dns; mx\.sealpost\.test\r$/m);
      assert.ok(part(mail, 'message/global-headers')!.content.toString('utf8').includes(original));
      assert.equal(global.mailFromArgs.BODY, '8BITMIME', 'its UTF-8 is in the body: 8BITMIME');
      assert.equal(global.mailFromArgs.SMTPUTF8, undefined, 'and its addresses and headers need no SMTPUTF8');
      assert.deepEqual(await dkimResults(global.raw), [`${DOMAIN}:pass`]);

      const ascii =
        'From: finn@sender.example\r\nTo: erin@rcpt.example\r\nSubject: ascii refused\r\n' +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <ascii@sender.example>\r\n';
      await submit(exchange, { from: 'finn@sender.example', to: 'erin@rcpt.example', data: `${ascii}\r\nHello\r\n` });
      const plain = await reportTo(sink, 'finn@sender.example');
      const plainMail = await simpleParser(plain.raw, { keepDeliveryStatus: true });
      assert.equal(reportType(plainMail), 'delivery-status');
      assert.deepEqual(
        plainMail.attachments.map((a) => a.contentType),
        ['message/delivery-status', 'text/rfc822-headers'],
      );
      assert.match(part(plainMail, 'message/delivery-status')!.content.toString(), /^Final-Recipient: rfc822; erin@/m);
      assert.ok(!plain.raw.some((byte) => byte >= 0x80), 'nothing 8-bit in it');
      assert.equal(plain.mailFromArgs.BODY, undefined, 'declared 7-bit');
      assert.match(rawPart(plain.raw, 'message/delivery-status')!, /^Content-Transfer-Encoding: 7bit\r\n/);
      assert.deepEqual(await dkimResults(plain.raw), [`${DOMAIN}:pass`]);
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });

  for (const key of ['rsa', 'ed25519'] as const) {
    it(`gets a UTF-8 recipient's report through a relay without SMTPUTF8 or 8BITMIME, signed (${key})`, async () => {
      const sink = await startSmtpSink({ hide8BITMIME: true, hideSMTPUTF8: true });
      const exchange = await exchangeWith(sink, key);
      try {
        // The relay cannot take jörg@ (no SMTPUTF8): the message fails (5.6.7), and its report must still go.
        const original = utf8Original(`old-relay-${key}`);
        const envelopeId = await submit(exchange, {
          from: 'dana@sender.example',
          to: 'jörg@rcpt.example',
          params: ' BODY=8BITMIME SMTPUTF8',
          data: `${original}\r\nHallo Jörg\r\n`,
        });
        await settled(exchange, envelopeId, 'failed');
        const report = await reportTo(sink, 'dana@sender.example');
        assert.ok(!report.raw.some((byte) => byte >= 0x80), 'made 7-bit for the relay');
        assert.equal(report.mailFromArgs.BODY, undefined);
        assert.equal(report.mailFromArgs.SMTPUTF8, undefined);

        const verdicts = await dkimResults(report.raw);
        assert.deepEqual(verdicts, [`${DOMAIN}:pass`], 'signed over the re-encoded bytes');
        assert.match(report.raw.toString(), new RegExp(`^DKIM-Signature: v=1; a=${key}-sha256;`, 'm'));
        assert.equal(report.raw.toString().match(/^DKIM-Signature:/gm)?.length, 1, 'signed once');
        const split = report.raw.indexOf('\r\n\r\n') + 4;
        const tampered = Buffer.from(report.raw);
        const at = tampered.indexOf('mail system', split);
        tampered[at] = 'M'.charCodeAt(0);
        assert.notDeepEqual(await dkimResults(tampered), [`${DOMAIN}:pass`], 'a changed byte fails');

        const headersPart = rawPart(report.raw, 'message/global-headers')!;
        assert.match(headersPart, /^Content-Transfer-Encoding: base64\r\n\r\n/);
        assert.ok(!headersPart.includes('=\r\n'), 'no soft line break in the headers part');
        const mail = await simpleParser(report.raw);
        assert.equal(reportType(mail), 'global-delivery-status');
        assert.ok(part(mail, 'message/global-headers')!.content.toString('utf8').includes(original), 'lines whole');
        const status = part(mail, 'message/global-delivery-status')!.content.toString('utf8');
        assert.match(status, /^Final-Recipient: utf-8; jörg@rcpt\.example\r$/m);
        assert.match(status, /^Status: 5\.6\.7\r$/m);
        const history = await statusHistory(
          exchange,
          /^bounce ([0-9a-f-]{36}) queued/.exec(
            (await statusHistory(exchange, envelopeId)).find((s) => s.status === 'bounced')!.detail!,
          )![1]!,
        );
        assert.match(history.at(-1)!.detail!, /re-encoded to 7-bit/);
      } finally {
        await exchange.stop();
        await sink.close();
      }
    });
  }

  it('writes a bounce to the outbox signed, when there is no relay', async () => {
    const seal = await startSealStandIn();
    seal.respond = () => 400;
    const exchange = await exchangeWith(undefined, 'ed25519', { outbound: 'seal', env: { SEAL_URL: seal.url } });
    try {
      const envelopeId = await submit(exchange, {
        from: 'dana@sender.example',
        to: 'erin@rcpt.example',
        data: 'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: not sealable\r\n\r\nx\r\n',
      });
      await settled(exchange, envelopeId, 'failed');
      const outbox = join(exchange.config.dataDir, 'outbox');
      const files = await eventually(
        'the bounce in the outbox',
        async () => (await readdir(outbox).catch(() => [])).filter((name) => name.endsWith('.eml')),
        (names) => names.length > 0,
      );
      const bounce = await readFile(join(outbox, files[0]!));
      assert.match(bounce.toString(), /^Return-Path: <>\r\nX-Sealpost-Envelope-To: dana@sender\.example\r\n/);
      assert.deepEqual(await dkimResults(bounce), [`${DOMAIN}:pass`]);
    } finally {
      await exchange.stop();
      seal.server?.close();
    }
  });

  it('sends a bounce its recipient refuses to BOUNCE_NOTICE_RECIPIENT, and drops a refused notice', async () => {
    const refused = new Set(['dana@sender.example', 'gus@sender.example', 'erin@rcpt.example']);
    const sink = await startSmtpSink({ failWith: (rcpt) => (refused.has(rcpt) ? 550 : undefined) });
    // Unset, BOUNCE_NOTICE_RECIPIENT is the postmaster of NOTIFY_FROM's domain.
    const exchange = await exchangeWith(sink, 'rsa');
    const postmaster = `postmaster@${DOMAIN}`;
    try {
      const original =
        'From: dana@sender.example\r\nTo: erin@rcpt.example\r\nSubject: double\r\n' +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <double@sender.example>\r\n';
      await submit(exchange, { from: 'dana@sender.example', to: 'erin@rcpt.example', data: `${original}\r\nx\r\n` });
      const notice = await reportTo(sink, postmaster);
      const mail = await simpleParser(notice.raw, { keepDeliveryStatus: true });
      assert.equal(mail.headers.get('x-sealpost-notice'), 'undeliverable-bounce');
      assert.equal(reportType(mail), 'delivery-status');
      const status = part(mail, 'message/delivery-status')!.content.toString();
      assert.match(status, /^Final-Recipient: rfc822; dana@sender\.example\r$/m, 'the bounce’s recipient');
      assert.match(status, /^Status: 5\.1\.1\r$/m);
      const bounceHeaders = part(mail, 'text/rfc822-headers')!.content.toString();
      assert.match(bounceHeaders, /^Subject: Undelivered Mail Returned to Sender\r$/m, 'the bounce’s own headers');
      assert.deepEqual(await dkimResults(notice.raw), [`${DOMAIN}:pass`]);
      assert.equal(await metric(exchange, 'bounce_notices_total', { outcome: 'queued' }), 1);
      assert.equal(await metric(exchange, 'bounce_replies_total'), 1, 'the bounce itself, once');

      // Now the postmaster refuses too: the notice fails, is logged and counted, and goes nowhere else.
      refused.add(postmaster);
      const before = sink.messages.length;
      const second = await submit(exchange, {
        from: 'gus@sender.example',
        to: 'erin@rcpt.example',
        data: `${original.replace('double@', 'double-2@')}\r\nx\r\n`,
      });
      const queued = async (id: string, what: RegExp) => {
        const history = await eventually(
          `${id} bounced`,
          () => statusHistory(exchange, id),
          (h) => h.some((s) => s.status === 'bounced'),
        );
        return what.exec(history.find((s) => s.status === 'bounced')!.detail!)![1]!;
      };
      const bounceId = await queued(second, /^bounce (\S+) queued to <gus@sender\.example>/);
      const noticeId = await queued(bounceId, new RegExp(`^notice (\\S+) queued to <${postmaster}>`));
      await settled(exchange, noticeId, 'failed');
      await eventually(
        'the dropped notice counted',
        () => metric(exchange, 'bounce_notices_total', { outcome: 'dropped' }),
        (count) => count === 1,
      );
      assert.ok(
        exchange.logs.some(
          (line) =>
            line.envelopeId === noticeId &&
            line.level === 40 &&
            /could not be delivered; dropped/.test(String(line.msg)),
        ),
        'the dropped notice is logged as a warning',
      );
      // Nothing more is written: every envelope is finished, and the relay got nothing after.
      await eventually(
        'no envelope left',
        async () => (await exchangeDb(exchange).selectFrom('envelopes').select('id').execute()).length,
        (count) => count === 0,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal((await exchangeDb(exchange).selectFrom('envelopes').select('id').execute()).length, 0);
      assert.equal(sink.messages.length, before, 'nothing reached the relay');
      assert.equal(await metric(exchange, 'bounce_notices_total', { outcome: 'queued' }), 2);
    } finally {
      await exchange.stop();
      await sink.close();
    }
  });
});
