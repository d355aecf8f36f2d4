import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql, type Kysely } from 'kysely';
import nodemailer from 'nodemailer';
import { Registry } from 'prom-client';
import { ConfigError } from '../../kernel/config.ts';
import { createLogger } from '../../kernel/logger.ts';
import { OrphanPayloadSweep } from '../delivery/orphans.ts';
import { createExchangeMetrics } from '../metrics.ts';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import type { ExchangeTables } from '../tables.ts';
import { payloadKey } from '../handoff.ts';
import { MessageIntake } from './accept.ts';
import { startInboundSmtpServer } from './smtp-server.ts';
import { loadInboundTls } from './smtp-tls.ts';
import { refuseConnections } from '../../../test/support/db-faults.ts';
import { exchangeDb, metric, payloadCount, payloadKeys, readObject } from '../../../test/support/exchange-delivery.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startSealpostProcess } from '../../../test/support/sealpost-process.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';
import { createTestCertificate, type TestCertificate } from '../../../test/support/tls.ts';

const LIMIT = 256 * 1024;
const MAX_RECIPIENTS = 3;
const MAX_CONNECTIONS = 4;

/** Keeps delivery workers (when the service runs them) away from the envelopes these tests inspect. */
const QUIET_DELIVERY = { DELIVERY_ENABLED: 'false', SEAL_URL: 'http://127.0.0.1:9' };

/**
 * These tests change the rules and the database behind the service's back, as another instance would:
 * MAIL FROM asks PostgreSQL each time (mail-from-rules.test.ts proves the snapshot it otherwise answers from).
 */
const RULES_READ_EACH_TIME = { SMTP_RULE_CACHE_TTL: '0s' };

const smtpPort = (service: ServiceUnderTest) => Number(new URL(service.service.listening.smtp!).port);

/** Splits a stored payload into our Received header (with its folded lines) and the sender's bytes. */
function splitReceived(stored: Buffer): { received: string; rest: Buffer } {
  const text = stored.toString('latin1');
  assert.ok(text.startsWith('Received: '), 'the payload starts with our Received header');
  let end = text.indexOf('\r\n');
  while (text[end + 2] === '\t' || text[end + 2] === ' ') end = text.indexOf('\r\n', end + 2);
  return { received: text.slice(0, end), rest: stored.subarray(end + 2) };
}

/** Polls until `check` holds, for at most 10 s (a bounded wait, not a timing assertion). */
async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`gave up waiting for ${what}`);
}

function queuedId(response: string): string {
  const match = /^250 2\.6\.0 Ok: queued as ([0-9a-f-]{36})$/m.exec(response);
  assert.ok(match, `a 250 queued reply: ${response}`);
  return match[1]!;
}

/** A message with what SMTP makes delicate: a line starting with a dot, 8-bit UTF-8, a long line. */
function sampleMessage(subject: string): Buffer {
  return Buffer.from(
    [
      'From: Alice <alice@example.com>',
      'To: bob@example.com',
      `Subject: ${subject}`,
      'Message-ID: <sample@example.com>',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      'Grüße aus Zürich.',
      '.a line that starts with a dot',
      '..and one with two',
      'x'.repeat(900),
      '',
    ].join('\r\n'),
  );
}

describe('inbound SMTP server', { timeout: 120_000 }, () => {
  let s3: S3TestServer;
  let cert: TestCertificate;
  let exchange: ServiceUnderTest;
  let db: Kysely<ExchangeTables>;
  let rules: RuleStore;
  let port: number;

  const mailer = (options: { name?: string } = {}) =>
    nodemailer.createTransport({
      host: '127.0.0.1',
      port,
      secure: false,
      requireTLS: true,
      name: options.name ?? 'test.local',
      tls: { ca: [cert.cert], servername: 'localhost' },
    });
  const sendRaw = (raw: Buffer, from = 'alice@example.com', to: string[] = ['bob@example.com']) =>
    mailer().sendMail({ envelope: { from, to }, raw });

  /** The reply to MAIL FROM after EHLO (refusals that come before the body). */
  async function mailFromReply(from: string): Promise<string> {
    const { talk } = await SmtpTalk.open(port);
    try {
      assert.match(await talk.send('EHLO test.local'), /^250-/);
      return await talk.send(`MAIL FROM:<${from}>`);
    } finally {
      talk.close();
    }
  }

  /** A whole transaction over a bare connection, without SIZE: the DATA size check is ours alone. */
  async function transact(
    message: Buffer | string,
    from = 'alice@example.com',
    to = ['bob@example.com'],
    beforeData?: () => Promise<void>,
  ): Promise<string> {
    const { talk } = await SmtpTalk.open(port);
    try {
      assert.match(await talk.send('EHLO test.local'), /^250-/);
      assert.match(await talk.send(`MAIL FROM:<${from}>`), /^250 /);
      for (const rcpt of to) assert.match(await talk.send(`RCPT TO:<${rcpt}>`), /^250 /);
      await beforeData?.();
      assert.match(await talk.send('DATA'), /^354 /);
      talk.write(message);
      talk.write('\r\n.\r\n');
      return await talk.reply();
    } finally {
      talk.close();
    }
  }

  const envelopeCount = async () =>
    Number(
      (
        await db
          .selectFrom('envelopes')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const statusCount = async () =>
    Number(
      (
        await db
          .selectFrom('message_status')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  before(async () => {
    [s3, cert] = await Promise.all([startS3Server(), createTestCertificate()]);
    exchange = await startServiceForTest(exchangeService, {
      s3,
      env: {
        ...QUIET_DELIVERY,
        ...RULES_READ_EACH_TIME,
        INBOUND_SMTP_TLS: 'true',
        INBOUND_SMTP_TLS_PUBLIC_KEY: cert.certPath,
        INBOUND_SMTP_TLS_PRIVATE_KEY: cert.keyPath,
        SMTP_MAX_MESSAGE_SIZE: String(LIMIT),
        SMTP_MAX_RECIPIENTS: String(MAX_RECIPIENTS),
        SMTP_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
        SMTP_HOSTNAME: 'mx.sealpost.test',
      },
    });
    db = exchangeDb(exchange);
    rules = new RuleStore(db);
    port = smtpPort(exchange);
  });
  after(async () => {
    await exchange?.stop();
    await s3?.stop();
    await cert?.remove();
  });
  beforeEach(async () => {
    await db.deleteFrom('rules').execute();
    await rules.create({
      name: 'seal inbound mail',
      priority: 10,
      configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
    });
  });

  it('greets with its hostname, advertises SIZE, PIPELINING, 8BITMIME, SMTPUTF8 and STARTTLS, no AUTH', async () => {
    const { talk, greeting } = await SmtpTalk.open(port);
    try {
      assert.match(greeting, /^220 mx\.sealpost\.test ESMTP Sealpost$/);
      const ehlo = (await talk.send('EHLO test.local')).split('\n').map((line) => line.slice(4));
      for (const feature of [
        `SIZE ${LIMIT}`,
        'PIPELINING',
        '8BITMIME',
        'SMTPUTF8',
        'ENHANCEDSTATUSCODES',
        'STARTTLS',
      ]) {
        assert.ok(ehlo.includes(feature), `EHLO lists ${feature}: ${ehlo.join(' | ')}`);
      }
      assert.ok(!ehlo.some((line) => line.startsWith('AUTH')), 'no AUTH: inbound is MX-like');
    } finally {
      talk.close();
    }
  });

  it('answers a pipelined MAIL FROM, RCPT TO and DATA in one write (RFC 2920), as Postfix does', async () => {
    const client = fileURLToPath(new URL('../../../test/support/pipelined-group.ts', import.meta.url));
    // Three rounds: when each reply is written by itself, a client in its own process sees them apart.
    for (let round = 0; round < 3; round++) {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', client, String(port)]);
      const chunks = JSON.parse(stdout) as string[];
      assert.equal(chunks.length, 1, `one write: ${stdout}`);
      assert.match(chunks[0]!, /^250 [^\r]*\r\n250 [^\r]*\r\n354 [^\r]*\r\n$/);
    }
  });

  it('stores mail over STARTTLS byte for byte under one Received header, with envelope and first status', async () => {
    const raw = sampleMessage('byte for byte');
    const before = Date.now();
    const info = await sendRaw(raw, 'Alice@Example.COM', ['bob@example.com']);
    const id = queuedId(info.response);

    const { received, rest } = splitReceived(await readObject(exchange.objects, payloadKey(id)));
    assert.ok(rest.equals(raw), 'the sender bytes are stored unchanged (dot-unstuffed, 8-bit intact)');
    assert.match(
      received,
      /^Received: from test\.local \(\[127\.0\.0\.1\]\)\r\n\tby mx\.sealpost\.test \(Sealpost\) with ESMTPS id /,
    );
    assert.ok(received.includes(`id ${id}`));
    assert.match(received, /\(using TLSv1\.[23] with cipher [A-Z0-9_-]+\)/);
    assert.match(received, /\tfor <bob@example\.com>; \w{3}, \d{1,2} \w{3} \d{4} \d\d:\d\d:\d\d \+0000$/);

    const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const rule = (await rules.list())[0]!;
    assert.equal(envelope.channel, 'smtp');
    assert.equal(envelope.sender, 'Alice@example.com', 'the envelope sender is normalised (domain lower-cased)');
    assert.deepEqual(envelope.recipients, ['bob@example.com']);
    assert.equal(envelope.size, received.length + 2 + raw.length);
    assert.equal(envelope.payload_key, payloadKey(id));
    assert.deepEqual(envelope.outbound, ['seal']);
    assert.equal(envelope.rule_id, rule.id);
    assert.equal(envelope.status, 'accepted');
    assert.ok(
      envelope.created_at.getTime() >= before - 5_000 &&
        envelope.updated_at.getTime() >= envelope.created_at.getTime() - 1,
    );
    const history = await db
      .selectFrom('message_status')
      .selectAll()
      .where('envelope_id', '=', id)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      history.map((row) => [row.status, row.detail]),
      [
        ['accepted', `${envelope.size} bytes over smtp`],
        ['routed', `by rule "${rule.name}" to seal`],
      ],
    );
  });

  it('takes a message from swaks over STARTTLS', async () => {
    const { stdout } = await promisify(execFile)('swaks', [
      '--server',
      '127.0.0.1',
      '--port',
      String(port),
      '--tls',
      '--helo',
      'test.local',
      '--from',
      'swaks@example.com',
      '--to',
      'bob@example.com',
      '--header',
      'Subject: via swaks',
      '--body',
      'hello from swaks',
      '--timeout',
      '20',
    ]);
    assert.match(stdout, /^ -> STARTTLS\n<- {2}220 2\.0\.0 /m, 'STARTTLS was accepted');
    assert.match(stdout, /^=== TLS started with cipher /m);
    assert.match(stdout, /^=== TLS peer DN="\/CN=localhost"/m, 'the configured certificate was presented');
    const id = /<~ {2}250 2\.6\.0 Ok: queued as ([0-9a-f-]{36})/.exec(stdout)?.[1];
    assert.ok(id, `swaks got a 250 inside TLS:\n${stdout}`);
    const { received, rest } = splitReceived(await readObject(exchange.objects, payloadKey(id)));
    assert.match(received, / with ESMTPS id /);
    assert.match(rest.toString(), /^Subject: via swaks$/m);
    assert.match(rest.toString(), /hello from swaks/);
    const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(envelope.sender, 'swaks@example.com');
  });

  it('accepts internationalised addresses with SMTPUTF8 and 8BITMIME, recorded normalised', async () => {
    const { talk } = await SmtpTalk.open(port);
    try {
      await talk.send('EHLO test.local');
      assert.match(await talk.send('MAIL FROM:<jörg@bücher.example> SMTPUTF8 BODY=8BITMIME'), /^250 /);
      assert.match(await talk.send('RCPT TO:<zoë@Bücher.example>'), /^250 /);
      assert.match(await talk.send('DATA'), /^354 /);
      talk.write('Subject: Grüße\r\n\r\nÄÖÜ\r\n.\r\n');
      const id = queuedId(await talk.reply());
      const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(envelope.sender, 'jörg@xn--bcher-kva.example');
      assert.deepEqual(envelope.recipients, ['zoë@xn--bcher-kva.example']);
      const { received, rest } = splitReceived(await readObject(exchange.objects, payloadKey(id)));
      assert.match(received, / with UTF8SMTP id /);
      assert.equal(rest.toString('utf8'), 'Subject: Grüße\r\n\r\nÄÖÜ\r\n');
    } finally {
      talk.close();
    }
  });

  it('refuses a message over SMTP_MAX_MESSAGE_SIZE (552 5.3.4) once past it, keeping nothing', async () => {
    const [payloads, envelopes] = [await payloadCount(exchange.objects), await envelopeCount()];
    const lines = (kib: number) => `${'y'.repeat(1022)}\r\n`.repeat(kib);
    const refused = () =>
      exchange.logs.some(
        (line) => line.msg === 'message refused' && /larger than the limit of/.test(String(line.reason)),
      );
    assert.ok(!refused());
    const { talk } = await SmtpTalk.open(port);
    try {
      await talk.send('EHLO test.local');
      await talk.send('MAIL FROM:<alice@example.com>');
      await talk.send('RCPT TO:<bob@example.com>');
      assert.match(await talk.send('DATA'), /^354 /);
      // No SIZE parameter was given: only the DATA byte counter can catch it. Twice the limit goes out,
      // and the upload is failed (and logged) while the rest of the message is still to come.
      talk.write(`Subject: too big\r\n\r\n${lines((2 * LIMIT) / 1024)}`);
      await waitFor(refused, 'the refusal of the oversize upload');
      talk.write(lines((8 * LIMIT) / 1024));
      talk.write('.\r\n');
      assert.match(await talk.reply(), /^552 5\.3\.4 /);
      // The session goes on: the next message on the same connection is taken.
      await talk.send('MAIL FROM:<alice@example.com>');
      await talk.send('RCPT TO:<bob@example.com>');
      await talk.send('DATA');
      talk.write('Subject: small\r\n\r\nfits\r\n.\r\n');
      queuedId(await talk.reply());
    } finally {
      talk.close();
    }
    assert.equal(await payloadCount(exchange.objects), payloads + 1, 'only the small message was stored');
    assert.equal(await envelopeCount(), envelopes + 1);
  });

  it('refuses a bad, past or doubled X-Sealpost-Expires after DATA: 554 5.6.0 naming it, nothing kept', async () => {
    const [payloads, envelopes, statuses] = [
      await payloadCount(exchange.objects),
      await envelopeCount(),
      await statusCount(),
    ];
    const expected =
      '; expected a life such as 7d, 72h or 1d12h, or an RFC 3339 time such as 2027-01-31T17:00:00+01:00';
    const message = (header: string) => `From: alice@example.com\r\n${header}\r\nSubject: ends\r\n\r\nbody\r\n`;
    const cases: Array<[string, string]> = [
      ['X-Sealpost-Expires: tomorrow', `554 5.6.0 X-Sealpost-Expires: "tomorrow" is not a duration${expected}`],
      ['X-Sealpost-Expires: -5m', `554 5.6.0 X-Sealpost-Expires: "-5m" is not a life${expected}`],
      [
        'X-Sealpost-Expires: 2027-13-01T00:00:00Z',
        `554 5.6.0 X-Sealpost-Expires: "2027-13-01T00:00:00Z" is not a valid time${expected}`,
      ],
      [
        'X-Sealpost-Expires: 2024-01-31T17:00:00+01:00',
        `554 5.6.0 X-Sealpost-Expires: "2024-01-31T17:00:00+01:00" lies in the past${expected}`,
      ],
      [
        'X-Sealpost-Expires: 7d\r\nx-sealpost-expires: 7d',
        '554 5.6.0 X-Sealpost-Expires is given 2 times ("7d", "7d"); give it once',
      ],
    ];
    const { talk } = await SmtpTalk.open(port);
    try {
      assert.match(await talk.send('EHLO test.local'), /^250-/);
      for (const [header, reply] of cases) {
        assert.match(await talk.send('MAIL FROM:<alice@example.com>'), /^250 /);
        assert.match(await talk.send('RCPT TO:<bob@example.com>'), /^250 /);
        assert.match(await talk.send('DATA'), /^354 /);
        talk.write(`${message(header)}.\r\n`);
        assert.equal(await talk.reply(), reply);
      }
    } finally {
      talk.close();
    }
    assert.equal(await payloadCount(exchange.objects), payloads, 'no payload stored');
    assert.equal(await envelopeCount(), envelopes, 'no envelope row');
    assert.equal(await statusCount(), statuses, 'no status row');
    assert.ok(
      exchange.logs.some(
        (line) =>
          line.msg === 'message refused' && /^554 5\.6\.0 X-Sealpost-Expires: "tomorrow"/.test(String(line.reply)),
      ),
      'the refusal is logged with its reply',
    );
  });

  it('takes X-Sealpost-Expires as a life or a future time, in any case, folded, or only in the body', async () => {
    const forms = [
      'X-Sealpost-Expires: 72h',
      'x-sealpost-expires:1d12h',
      'X-SEALPOST-EXPIRES :   7d   ',
      'X-Sealpost-Expires:\r\n\t2999-01-31T17:00:00+01:00',
      'X-Sealpost-Expires: 2999-01-31 16:00:00.5z',
    ];
    for (const header of forms) {
      // transact() ends the message with CRLF . CRLF.
      const raw = `From: alice@example.com\r\n${header}\r\nSubject: ends\r\n\r\nbody`;
      const id = queuedId(await transact(raw));
      const { rest } = splitReceived(await readObject(exchange.objects, payloadKey(id)));
      assert.equal(rest.toString(), `${raw}\r\n`, 'stored as sent: the seal service reads and removes the header');
    }
    // Bare LF line ends; a header-like line in the body is not a header.
    const body = 'From: alice@example.com\nSubject: ends\n\nX-Sealpost-Expires: whenever';
    queuedId(await transact(body));
  });

  it('refuses at MAIL FROM a message whose declared SIZE is over the limit', async () => {
    await assert.rejects(
      sendRaw(Buffer.alloc(LIMIT + 1, 'a')),
      (error: { responseCode?: number; response?: string }) => {
        assert.equal(error.responseCode, 552);
        assert.match(error.response ?? '', /^552 5\.3\.4 /);
        return true;
      },
    );
  });

  it('answers 452 4.5.3 to each recipient over SMTP_MAX_RECIPIENTS and takes the message for the others', async () => {
    const { talk } = await SmtpTalk.open(port);
    try {
      await talk.send('EHLO test.local');
      await talk.send('MAIL FROM:<alice@example.com>');
      for (let i = 1; i <= MAX_RECIPIENTS; i++) assert.match(await talk.send(`RCPT TO:<r${i}@example.com>`), /^250 /);
      assert.match(await talk.send('RCPT TO:<one-too-many@example.com>'), /^452 4\.5\.3 .*too many recipients/i);
      await talk.send('DATA');
      talk.write('Subject: many\r\n\r\nhi\r\n.\r\n');
      const id = queuedId(await talk.reply());
      const envelope = await db
        .selectFrom('envelopes')
        .select('recipients')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(envelope.recipients, ['r1@example.com', 'r2@example.com', 'r3@example.com']);
    } finally {
      talk.close();
    }
  });

  it('refuses addresses that do not parse or normalise with a 5xx, and takes the null sender <>', async () => {
    const { talk } = await SmtpTalk.open(port);
    try {
      await talk.send('EHLO test.local');
      // smtp-server's own syntax check, then ours (normalizeEmail: no address literals, valid IDN domains).
      assert.match(await talk.send('MAIL FROM:<alice@-bad-.example>'), /^501 5\.1\.7 /);
      assert.match(
        await talk.send('MAIL FROM:<alice@[127.0.0.1]>'),
        /^553 5\.1\.3 Sender address <alice@\[127\.0\.0\.1\]> is not a valid email address$/,
      );
      assert.match(await talk.send('MAIL FROM:<>'), /^250 /);
      assert.match(await talk.send('RCPT TO:<bob@exa mple.com>'), /^501 /);
      assert.match(
        await talk.send('RCPT TO:<bob@[127.0.0.1]>'),
        /^553 5\.1\.3 Recipient address <bob@\[127\.0\.0\.1\]> is not a valid email address$/,
      );
      assert.match(await talk.send('RCPT TO:<bob@example.com>'), /^250 /);
      await talk.send('DATA');
      talk.write('Subject: a notification\r\n\r\nfrom nobody\r\n.\r\n');
      const id = queuedId(await talk.reply());
      const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(envelope.sender, '', 'the null sender is stored as the empty string');
      assert.deepEqual(envelope.recipients, ['bob@example.com']);
    } finally {
      talk.close();
    }
  });

  it('refuses a connection over SMTP_MAX_CONNECTIONS with 421 4.3.2, and counts it', async () => {
    const refused = await metric(exchange, 'smtp_refused_total', { reason: 'max_connections' });
    const open: SmtpTalk[] = [];
    try {
      for (let i = 0; i < MAX_CONNECTIONS; i++) {
        const { talk, greeting } = await SmtpTalk.open(port);
        open.push(talk);
        assert.match(greeting, /^220 /);
      }
      const { talk, greeting } = await SmtpTalk.open(port);
      open.push(talk);
      assert.equal(greeting, '421 4.3.2 mx.sealpost.test Too many connected clients, try again in a moment');
      await talk.closedByServer();
    } finally {
      for (const talk of open) talk.close();
    }
    assert.equal(await metric(exchange, 'smtp_refused_total', { reason: 'max_connections' }), refused + 1);
  });

  it('answers 451 saying a rule must be created first when there is no rule, and stores nothing', async () => {
    await db.deleteFrom('rules').execute();
    const [payloads, statuses] = [await payloadCount(exchange.objects), await statusCount()];
    await assert.rejects(sendRaw(sampleMessage('no rule')), (error: { response?: string }) => {
      assert.equal(
        error.response,
        '451 4.3.0 No delivery rule exists yet: create one with POST /v1/config before sending messages',
      );
      return true;
    });
    assert.equal(await payloadCount(exchange.objects), payloads);
    assert.equal(await statusCount(), statuses);
  });

  it('answers 451 when rules exist but none matches channel and sender; routes by sender when one does', async () => {
    await db.deleteFrom('rules').execute();
    await rules.create({
      name: 'replies',
      priority: 1,
      configuration: { params: { channel: 'json' }, outbound: ['smtp'] },
    });
    await rules.create({
      name: 'from carol',
      priority: 2,
      configuration: { params: { channel: 'smtp', sender: 'carol@example.com' }, outbound: ['smtp'] },
    });
    await assert.rejects(sendRaw(sampleMessage('no match')), (error: { response?: string }) => {
      assert.match(
        error.response ?? '',
        /^451 4\.3\.0 No delivery rule matches channel smtp and sender alice@example\.com/,
      );
      return true;
    });
    const id = queuedId((await sendRaw(sampleMessage('from carol'), 'carol@example.com')).response);
    const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(envelope.outbound, ['smtp']);
  });

  it('answers 451 while the object store is down, keeps nothing, and takes mail again once it is back', async () => {
    const [envelopes, statuses] = [await envelopeCount(), await statusCount()];
    await s3.pause();
    try {
      const reply = await transact(sampleMessage('store down'));
      assert.match(reply, /^451 4\.3\.0 Message storage is unavailable; try again later$/);
      assert.equal(await envelopeCount(), envelopes, 'no envelope row');
      assert.equal(await statusCount(), statuses, 'no status row');
    } finally {
      await s3.resume();
    }
    const id = queuedId(await transact(sampleMessage('store back')));
    assert.ok(await exchange.objects.head(payloadKey(id)));
  });

  it('answers 451 when the envelope cannot be written and deletes the payload it had stored', async () => {
    const payloads = await payloadCount(exchange.objects);
    await sql`alter table exchange.envelopes rename to envelopes_offline`.execute(exchange.database.db);
    try {
      const reply = await transact(sampleMessage('table gone'));
      assert.match(reply, /^451 4\.3\.0 Message database is unavailable; try again later$/);
    } finally {
      await sql`alter table exchange.envelopes_offline rename to envelopes`.execute(exchange.database.db);
    }
    assert.equal(await payloadCount(exchange.objects), payloads, 'no orphan payload in the bucket');
    queuedId(await transact(sampleMessage('table back')));
  });

  it('answers 451 at MAIL FROM while the database refuses connections, before the body is sent', async () => {
    const restore = await refuseConnections(exchange.config.databaseUrl!);
    try {
      assert.match(
        await mailFromReply('alice@example.com'),
        /^451 4\.3\.0 Message database is unavailable; try again later$/,
      );
    } finally {
      await restore();
    }
  });

  it('answers 451 if the database goes in DATA, leaving the payload to the sweep; takes mail when back', async () => {
    const before = new Set(await payloadKeys(exchange.objects));
    const [envelopes, statuses] = [await envelopeCount(), await statusCount()];
    let restore: (() => Promise<void>) | undefined;
    let reply: string;
    try {
      reply = await transact(sampleMessage('database down'), undefined, undefined, async () => {
        restore = await refuseConnections(exchange.config.databaseUrl!);
      });
    } finally {
      await restore?.();
    }
    assert.match(reply, /^451 4\.3\.0 Message database is unavailable; try again later$/);
    assert.deepEqual([await envelopeCount(), await statusCount()], [envelopes, statuses], 'no envelope, no status row');
    // Whether the row was committed is unknown to the intake (connection-level error): the payload stays,
    // and the sweep removes it once it has had no row for its grace period (none here).
    const kept = (await payloadKeys(exchange.objects)).filter((key) => !before.has(key));
    assert.equal(kept.length, 1, 'the payload of the refused message is kept');
    const sweep = new OrphanPayloadSweep({
      db,
      objects: exchange.objects,
      graceMs: 0,
      logger: createLogger({ level: 'silent' }),
    });
    await sweep.sweep();
    assert.equal(await exchange.objects.head(kept[0]!), undefined, 'the orphan sweep deleted it');
    queuedId(await transact(sampleMessage('database back')));
  });

  it('counts every DATA in smtp_incoming_total, every 250 in smtp_incoming_stored, and times each', async () => {
    const metric = async () => {
      const text = await (await fetch(`${exchange.metricsUrl}/metrics`)).text();
      const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      return {
        total: value('smtp_incoming_total'),
        stored: value('smtp_incoming_stored'),
        timed: value('smtp_incoming_duration_seconds_count'),
      };
    };
    const start = await metric();
    for (let i = 0; i < 3; i++) queuedId(await transact(sampleMessage(`counted ${i}`)));
    assert.match(await transact(`Subject: big\r\n\r\n${'z'.repeat(LIMIT + 10)}`), /^552 /);
    await db.deleteFrom('rules').execute();
    // "No rule" is decided at MAIL FROM now: no DATA, so it is not counted.
    assert.match(await mailFromReply('alice@example.com'), /^451 4\.3\.0 No delivery rule exists yet/);
    const end = await metric();
    assert.deepEqual(
      { total: end.total - start.total, stored: end.stored - start.stored, timed: end.timed - start.timed },
      { total: 4, stored: 3, timed: 4 },
    );
  });

  describe('without TLS configured', () => {
    let plain: ServiceUnderTest;
    before(async () => {
      plain = await startServiceForTest(exchangeService, { s3, env: QUIET_DELIVERY });
      await new RuleStore(exchangeDb(plain)).create({
        name: 'all',
        priority: 1,
        configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
      });
    });
    after(() => plain?.stop());

    it('does not offer STARTTLS and refuses the command', async () => {
      const { talk } = await SmtpTalk.open(smtpPort(plain));
      try {
        const ehlo = await talk.send('EHLO test.local');
        assert.match(ehlo, /SIZE 26214400/, 'the default limit is 25 MiB');
        assert.doesNotMatch(ehlo, /STARTTLS/);
        assert.match(await talk.send('STARTTLS'), /^5\d\d /);
      } finally {
        talk.close();
      }
    });

    it('streams a 20 MB message into the object store intact', async () => {
      const line = `${'0123456789'.repeat(7)}abcdef\r\n`;
      const raw = Buffer.from(`Subject: large\r\n\r\n${line.repeat(Math.ceil(20_000_000 / line.length))}`);
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: smtpPort(plain),
        secure: false,
        ignoreTLS: true,
        name: 'test.local',
      });
      const id = queuedId(
        (await transport.sendMail({ envelope: { from: 'alice@example.com', to: ['bob@example.com'] }, raw })).response,
      );
      const stored = await readObject(plain.objects, payloadKey(id));
      const { rest } = splitReceived(stored);
      assert.equal(rest.length, raw.length);
      assert.equal(createHash('sha256').update(rest).digest('hex'), createHash('sha256').update(raw).digest('hex'));
      const envelope = await exchangeDb(plain)
        .selectFrom('envelopes')
        .select('size')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.equal(envelope.size, stored.length);
    });

    /** An SMTP server of its own on the service's stores, with an intake the test may wrap before it starts. */
    function ownSmtpServer(drainTimeoutMs: number) {
      const pdb = exchangeDb(plain);
      const logger = createLogger({ level: 'silent' });
      const intake = new MessageIntake({ db: pdb, objects: plain.objects, rules: new RuleStore(pdb), logger });
      const start = () =>
        startInboundSmtpServer({
          config: plain.config,
          settings: { ...plain.config.exchange, smtpPort: 0 },
          intake,
          metrics: createExchangeMetrics(new Registry()),
          logger,
          drainTimeoutMs,
        });
      return { db: pdb, intake, start };
    }

    it('on close, stops taking connections but lets a message in transfer finish, then says 421', async () => {
      const { db: pdb, start } = ownSmtpServer(20_000);
      const server = await start();
      const serverPort = Number(new URL(server.url).port);
      const { talk } = await SmtpTalk.open(serverPort);
      const { talk: idle } = await SmtpTalk.open(serverPort);
      try {
        await talk.send('EHLO test.local');
        await talk.send('MAIL FROM:<alice@example.com>');
        await talk.send('RCPT TO:<bob@example.com>');
        assert.match(await talk.send('DATA'), /^354 /);
        talk.write('Subject: in transfer\r\n\r\nfirst half\r\n');

        const closing = server.close();
        await assert.rejects(
          new Promise((resolve, reject) =>
            connect(serverPort, '127.0.0.1').once('connect', resolve).once('error', reject),
          ),
          /ECONNREFUSED/,
          'no new connections once closing',
        );
        talk.write('second half\r\n.\r\n');
        const id = queuedId(await talk.reply());
        await closing;
        await talk.closedByServer();
        await idle.closedByServer();
        assert.ok(
          await pdb.selectFrom('envelopes').select('id').where('id', '=', id).executeTakeFirst(),
          'the finished message was stored',
        );
        assert.equal(
          splitReceived(await readObject(plain.objects, payloadKey(id))).rest.toString(),
          'Subject: in transfer\r\n\r\nfirst half\r\nsecond half\r\n',
        );
      } finally {
        talk.close();
        idle.close();
      }
    });
    it('sends 354 before it starts on the message, so the body is on its way while the intake sets up', async () => {
      const { intake, start } = ownSmtpServer(1_000);
      const dir = await mkdtemp(join(tmpdir(), 'sealpost-354-'));
      const marker = join(dir, 'got-354');
      let sawMarker: boolean | undefined;
      const accept = intake.accept.bind(intake);
      intake.accept = (message) => {
        // Holds the event loop, as the message's own work does, until the client (its own process) has had 354,
        // for at most 5 s: a 354 still held by this process cannot reach it meanwhile.
        const until = Date.now() + 5_000;
        while (!existsSync(marker) && Date.now() < until);
        sawMarker = existsSync(marker);
        return accept(message);
      };
      const server = await start();
      try {
        const client = fileURLToPath(new URL('../../../test/support/pipelined-group.ts', import.meta.url));
        const serverPort = new URL(server.url).port;
        const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', client, serverPort, marker]);
        assert.equal((JSON.parse(stdout) as string[]).length, 1, `the group's replies in one write: ${stdout}`);
        await waitFor(() => sawMarker !== undefined, 'the message to reach the intake');
        assert.equal(sawMarker, true, 'the client had 354 before the intake started on the message');
      } finally {
        await server.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe('TLS files', () => {
    it('stop start-up with a message naming variable and file when unreadable, not PEM, or not a pair', async () => {
      const other = await createTestCertificate();
      const dir = await mkdtemp(join(tmpdir(), 'sealpost-badpem-'));
      try {
        const garbage = join(dir, 'garbage.pem');
        await writeFile(garbage, 'not a certificate\n');
        const cases: Array<[{ certPath: string; keyPath: string }, RegExp]> = [
          [
            { certPath: join(dir, 'missing.pem'), keyPath: cert.keyPath },
            /INBOUND_SMTP_TLS_PUBLIC_KEY=.*missing\.pem: cannot read the certificate file \(ENOENT/,
          ],
          [
            { certPath: cert.certPath, keyPath: join(dir, 'missing-key.pem') },
            /INBOUND_SMTP_TLS_PRIVATE_KEY=.*missing-key\.pem: cannot read the private key file/,
          ],
          [
            { certPath: garbage, keyPath: cert.keyPath },
            /INBOUND_SMTP_TLS_PUBLIC_KEY=.*garbage\.pem does not hold a PEM certificate/,
          ],
          [
            { certPath: cert.certPath, keyPath: garbage },
            /INBOUND_SMTP_TLS_PRIVATE_KEY=.*garbage\.pem does not hold an unencrypted PEM private key/,
          ],
          [
            { certPath: cert.certPath, keyPath: other.keyPath },
            new RegExp(
              /INBOUND_SMTP_TLS_PRIVATE_KEY=.*key\.pem does not belong /.source +
                /to the certificate in INBOUND_SMTP_TLS_PUBLIC_KEY=/.source,
            ),
          ],
        ];
        for (const [paths, message] of cases) {
          assert.throws(
            () => loadInboundTls(paths),
            (error: unknown) => {
              assert.ok(error instanceof ConfigError);
              assert.match(error.message, message);
              return true;
            },
          );
        }
        assert.ok(loadInboundTls({ certPath: cert.certPath, keyPath: cert.keyPath }));
      } finally {
        await other.remove();
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('make `sealpost start exchange` exit with status 1 and the reason on stderr', async () => {
      const database = await createTestDatabase('exchange_tls');
      const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-tls-start-'));
      try {
        await assert.rejects(
          startSealpostProcess(
            {
              NODE_ENV: 'test',
              DATABASE_URL: database.url,
              SEALPOST_DATA_DIR: dataDir,
              INBOUND_SMTP_TLS: 'true',
              INBOUND_SMTP_TLS_PUBLIC_KEY: cert.certPath,
              INBOUND_SMTP_TLS_PRIVATE_KEY: join(dataDir, 'no-such-key.pem'),
            },
            { which: 'exchange' },
          ),
          (error: Error) => {
            assert.match(error.message, /sealpost exited \(1\)/);
            assert.match(
              error.message,
              /INBOUND_SMTP_TLS_PRIVATE_KEY=.*no-such-key\.pem: cannot read the private key file/,
            );
            return true;
          },
        );
      } finally {
        await database.drop();
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  });
});
