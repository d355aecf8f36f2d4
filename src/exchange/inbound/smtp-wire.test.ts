import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import type { ExchangeTables } from '../tables.ts';
import { exchangeDb, metric } from '../../../test/support/exchange-delivery.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';
import { createTestCertificate, type TestCertificate } from '../../../test/support/tls.ts';

/** RFC 3463 / RFC 2034: a refusal's every line carries an enhanced status code of its class. */
const ENHANCED = /^([45])\d\d[ -]\1\.\d{1,3}\.\d{1,3} /;

/**
 * The SMTP door on the wire: only what EHLO advertises is taken (REQUIRETLS is not, before or after
 * STARTTLS), every refusal carries an enhanced status code, and quoted local parts with escaped
 * characters are addresses.
 */
describe('inbound SMTP on the wire', { timeout: 120_000 }, () => {
  let s3: S3TestServer;
  let cert: TestCertificate;
  let exchange: ServiceUnderTest;
  let db: Kysely<ExchangeTables>;
  let port: number;

  before(async () => {
    [s3, cert] = await Promise.all([startS3Server(), createTestCertificate()]);
    exchange = await startServiceForTest(exchangeService, {
      s3,
      env: {
        DELIVERY_ENABLED: 'false',
        SEAL_URL: 'http://127.0.0.1:9',
        INBOUND_SMTP_TLS: 'true',
        INBOUND_SMTP_TLS_PUBLIC_KEY: cert.certPath,
        INBOUND_SMTP_TLS_PRIVATE_KEY: cert.keyPath,
        SMTP_MAX_RECIPIENTS: '2',
        SMTP_HOSTNAME: 'mx.sealpost.test',
        // MAIL FROM reads the rules each time: a test removes them behind the service's back.
        SMTP_RULE_CACHE_TTL: '0s',
      },
    });
    db = exchangeDb(exchange);
    port = Number(new URL(exchange.service.listening.smtp!).port);
  });
  after(async () => {
    await exchange?.stop();
    await s3?.stop();
    await cert?.remove();
  });
  beforeEach(async () => {
    await db.deleteFrom('rules').execute();
    await new RuleStore(db).create({
      name: 'seal',
      priority: 10,
      configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
    });
  });

  it('answers REQUIRETLS, AUTH= and other unadvertised parameters 555 5.5.4, before and after STARTTLS', async () => {
    const { talk } = await SmtpTalk.open(port);
    try {
      const plainEhlo = await talk.send('EHLO client.example');
      assert.doesNotMatch(plainEhlo, /REQUIRETLS|AUTH/);
      for (const parameter of ['REQUIRETLS', 'AUTH=<>', 'RET=FULL', 'X-UNKNOWN=1']) {
        assert.match(await talk.send(`MAIL FROM:<dana@sender.example> ${parameter}`), /^555 5\.5\.4 /, parameter);
      }
      assert.match(await talk.startTls(cert.cert), /^220 /);
      const tlsEhlo = await talk.send('EHLO client.example');
      assert.doesNotMatch(tlsEhlo, /REQUIRETLS/, 'RFC 8689 is not offered');
      for (const parameter of ['REQUIRETLS', 'AUTH=<>', 'ENVID=x']) {
        assert.match(await talk.send(`MAIL FROM:<dana@sender.example> ${parameter}`), /^555 5\.5\.4 /, parameter);
      }
      // What is advertised is still taken.
      assert.match(await talk.send('MAIL FROM:<dana@sender.example> BODY=8BITMIME SIZE=100 SMTPUTF8'), /^250 /);
      assert.match(await talk.send('RCPT TO:<erin@rcpt.example> NOTIFY=NEVER'), /^555 5\.5\.4 /);
    } finally {
      talk.close();
    }
  });

  it('counts the parser\'s 501 refusals in smtp_refused_total{reason="syntax"}', async () => {
    const before = await metric(exchange, 'smtp_refused_total', { reason: 'syntax' });
    const { talk } = await SmtpTalk.open(port);
    try {
      assert.match(await talk.send('EHLO'), /^501 /);
      assert.match(await talk.send('EHLO client.example'), /^250/);
      assert.match(await talk.send('MAIL FROM:dana@sender.example'), /^501 /);
      assert.match(await talk.send('MAIL FROM:<dana@sender.example>'), /^250/);
      assert.match(await talk.send('RCPT TO:<erin@@rcpt.example'), /^501 /);
    } finally {
      talk.close();
    }
    assert.equal(await metric(exchange, 'smtp_refused_total', { reason: 'syntax' }), before + 3);
  });

  it('gives every 4xx and 5xx reply an enhanced status code', async () => {
    const refusals: string[] = [];
    const expectRefusal = async (talk: SmtpTalk, command: string, code: RegExp) => {
      const reply = await talk.send(command);
      assert.match(reply, code, `${command} -> ${reply}`);
      refusals.push(`${command} -> ${reply}`);
      for (const line of reply.split('\n')) assert.match(line, ENHANCED, `${command} -> ${reply}`);
    };

    const { talk } = await SmtpTalk.open(port);
    try {
      await expectRefusal(talk, 'MAIL FROM:<dana@sender.example>', /^503 /);
      await expectRefusal(talk, 'EHLO', /^501 /);
      await expectRefusal(talk, 'EHLO two words', /^501 /);
      await expectRefusal(talk, 'HELO', /^501 /);
      assert.match(await talk.send('EHLO client.example'), /^250/);
      await expectRefusal(talk, 'FROBNICATE', /^500 /);
      await expectRefusal(talk, 'RCPT TO:<erin@rcpt.example>', /^503 /);
      await expectRefusal(talk, 'DATA', /^503 /);
      await expectRefusal(talk, 'AUTH PLAIN', /^5\d\d /);
      await expectRefusal(talk, 'STARTTLS now', /^501 /);
      await expectRefusal(talk, 'MAIL FROM:<not an address>', /^5\d\d /);
      await expectRefusal(talk, 'MAIL FROM:<dana@sender.example> SIZE=abc', /^501 /);
      await expectRefusal(talk, 'MAIL FROM:<dana@sender.example> BODY=9BIT', /^501 /);
      await expectRefusal(talk, 'MAIL FROM:<user@[10.0.0.1]>', /^553 /);
      assert.match(await talk.send('MAIL FROM:<dana@sender.example>'), /^250 /);
      await expectRefusal(talk, 'MAIL FROM:<dana@sender.example>', /^503 /);
      await expectRefusal(talk, 'RCPT TO:<>', /^501 /);
      await expectRefusal(talk, 'RCPT TO:<user@[10.0.0.1]>', /^553 /);
      await expectRefusal(talk, 'RCPT TO:<jörg@rcpt.example>', /^553 /);
      assert.match(await talk.send('RCPT TO:<one@rcpt.example>'), /^250 /);
      assert.match(await talk.send('RCPT TO:<two@rcpt.example>'), /^250 /);
      await expectRefusal(talk, 'RCPT TO:<three@rcpt.example>', /^452 /);
      assert.match(await talk.send('RSET'), /^250 /);
      // No rule for this channel and sender: refused before the body is sent.
      await db.deleteFrom('rules').execute();
      await expectRefusal(talk, 'MAIL FROM:<dana@sender.example>', /^451 /);
      assert.match(await talk.startTls(cert.cert), /^220 /);
      assert.match(await talk.send('EHLO client.example'), /^250/);
      await expectRefusal(talk, 'STARTTLS', /^503 /);
    } finally {
      talk.close();
    }
    // smtp-server closes a connection after too many unknown commands, with a 421 of its own.
    const second = await SmtpTalk.open(port);
    try {
      assert.match(await second.talk.send('EHLO client.example'), /^250/);
      let last = '';
      for (let i = 0; i < 12 && !last.startsWith('421'); i++) last = await second.talk.send(`BOGUS${i}`);
      assert.match(last, /^421 /);
      assert.match(last, ENHANCED, last);
    } finally {
      second.talk.close();
    }
    assert.ok(refusals.length >= 20);
  });

  it('takes quoted local parts with escaped characters at MAIL FROM and RCPT TO, kept as written', async () => {
    const { talk } = await SmtpTalk.open(port);
    try {
      assert.match(await talk.send('EHLO client.example'), /^250/);
      assert.match(await talk.send('MAIL FROM:<"da\\"na"@sender.example>'), /^250 /);
      assert.match(await talk.send('RCPT TO:<"we\\"ird"@rcpt.example>'), /^250 /);
      assert.match(await talk.send('RCPT TO:<"quoted \\\\ local"@rcpt.example>'), /^250 /);
      assert.match(await talk.send('DATA'), /^354 /);
      talk.write('Subject: quoted\r\n\r\nHello\r\n');
      const done = await talk.send('.');
      const id = /queued as ([0-9a-f-]{36})/.exec(done)?.[1];
      assert.ok(id, done);
      const envelope = await db
        .selectFrom('envelopes')
        .select(['sender', 'recipients'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.equal(envelope.sender, '"da\\"na"@sender.example');
      assert.deepEqual(envelope.recipients, ['"we\\"ird"@rcpt.example', '"quoted \\\\ local"@rcpt.example']);
      assert.match(await talk.send('MAIL FROM:<dana@sender.example>'), /^250 /);
      for (const bad of ['"we"ird"@rcpt.example', '"open@rcpt.example']) {
        assert.match(await talk.send(`RCPT TO:<${bad}>`), /^5\d\d /, bad);
      }
    } finally {
      talk.close();
    }
  });
});
