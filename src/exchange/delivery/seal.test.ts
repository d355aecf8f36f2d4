import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import type { Intake } from '../handoff.ts';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import { exchangeDb, intakeFor, metric, sampleMessage, settled } from '../../../test/support/exchange-delivery.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink.ts';
import { startSealStandIn } from '../../../test/support/exchange-seal-stand-in.ts';

const confidential = (messageId: string, to = 'sms-ann@rcpt.example, bo@rcpt.example') =>
  sampleMessage({
    from: 'Alice <alice@sender.example>',
    to,
    subject: 'Quarterly figures',
    messageId,
    body: ['The numbers are in.'],
  });

describe('delivery through the seal strategy', () => {
  let s3: S3TestServer;
  let sink: SmtpSink;
  let seal: Awaited<ReturnType<typeof startSealStandIn>>;
  let exchange: ServiceUnderTest;
  let intake: Intake;
  let rules: RuleStore;

  before(async () => {
    [s3, sink, seal] = await Promise.all([startS3Server(), startSmtpSink(), startSealStandIn()]);
    exchange = await startServiceForTest(exchangeService, {
      s3,
      env: {
        OUTBOUND_SMTP_URL: sink.url,
        SEAL_URL: seal.url,
        NOTIFY_FROM: 'Sealpost <notify@sealpost.test>',
        DELIVERY_RETRY_BASE: '50ms',
        DELIVERY_MAX_RETRIES: '3',
        DELIVERY_POLL_INTERVAL: '25ms',
      },
    });
    rules = new RuleStore(exchangeDb(exchange));
    await rules.create({
      name: 'seal inbound',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
    });
    await rules.create({
      name: 'relay and seal replies',
      priority: 1,
      configuration: { params: { channel: 'json' }, outbound: ['smtp', 'seal'] },
    });
    intake = intakeFor(exchange);
  });
  after(async () => {
    await exchange?.stop();
    seal?.server?.close();
    await Promise.all([sink?.close(), s3?.stop()]);
  });
  beforeEach(() => {
    seal.respond = () => 201;
    seal.expiresAt = undefined;
    seal.eventStatus = 201;
  });

  it("reports each notified recipient to the seal service's trail, and delivers when that report fails", async () => {
    for (const eventStatus of [201, 503]) {
      seal.eventStatus = eventStatus;
      const recipients = ['ann@rcpt.example', 'bo@rcpt.example'];
      const { envelopeId } = await intake.accept({
        channel: 'smtp',
        sender: 'alice@sender.example',
        recipients,
        payload: confidential(`<trail-${eventStatus}@sender.example>`, recipients.join(', ')),
      });
      const history = await settled(exchange, envelopeId, 'delivered');
      const sealedId = /sealed as ([0-9a-f-]{36})/.exec(history.at(-1)!.detail!)?.[1];
      assert.ok(sealedId);
      // Not awaited by the delivery: wait for both reports to arrive.
      const deadline = Date.now() + 5_000;
      const reported = () => seal.events.filter((event) => event.sealedId === sealedId);
      while (reported().length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(
        reported()
          .map((event) => event.body)
          .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
        recipients.map((recipient) => ({ event: 'notified', recipient })),
      );
      assert.ok(reported().every((event) => event.authorization === `Bearer ${exchange.serviceToken}`));
    }
  });

  it('seals the raw message and sends every envelope recipient a notification with the reader link', async () => {
    const sealedBefore = await metric(exchange, 'delivered_messages_total', { strategy: 'seal' });
    const raw = confidential('<sealed-1@sender.example>');
    const recipients = ['sms-ann@rcpt.example', 'bo@rcpt.example', 'bcc-cy@rcpt.example'];
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients,
      payload: raw,
    });
    const history = await settled(exchange, envelopeId, 'delivered');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'delivered'],
    );

    const calls = seal.calls.filter((c) => c.headers['x-sealpost-envelope-id'] === envelopeId);
    assert.equal(calls.length, 1);
    const call = calls[0]!;
    assert.equal(call.headers.authorization, `Bearer ${exchange.serviceToken}`);
    assert.equal(call.headers['content-type'], 'message/rfc822');
    assert.equal(call.headers['x-sealpost-envelope-recipients'], recipients.join(', '));
    assert.ok(call.body.equals(raw), 'the seal service receives the raw message unchanged');
    const sealedId = /^seal: sealed as ([0-9a-f-]{36}), 3 recipient\(s\) notified$/.exec(history[3]!.detail!)?.[1];
    assert.ok(sealedId, history[3]!.detail!);

    const notifications = sink.messages.filter((m) =>
      m.raw.toString().toLowerCase().includes(`x-sealpost-sealed-id: ${sealedId}`),
    );
    assert.deepEqual(notifications.map((m) => m.to).sort(), recipients.map((r) => [r]).sort());
    for (const notification of notifications) {
      assert.equal(notification.from, 'notify@sealpost.test');
      const mail = await simpleParser(notification.raw);
      assert.equal(mail.subject, 'A sealed message from Alice <alice@sender.example> is waiting for you');
      // No language was chosen for these recipients: the link names none (not NOTIFY_DEFAULT_LANGUAGE), so the
      // reader page follows the browser's.
      assert.match(mail.text ?? '', new RegExp(`http://auth\\.sealpost\\.test/m/${sealedId}\\n`));
      assert.match(String(mail.html), new RegExp(`href="http://auth\\.sealpost\\.test/m/${sealedId}"`));
      assert.equal(mail.headers.get('auto-submitted'), 'auto-generated');
      assert.doesNotMatch(
        notification.raw.toString(),
        /Quarterly figures|numbers are in/,
        'nothing of the sealed content travels in clear',
      );
      const how = notification.to[0]!.startsWith('sms-')
        ? /code that we send by SMS/
        : /code that we send to this email address/;
      assert.match(mail.text ?? '', how);
    }
    assert.equal(await metric(exchange, 'delivered_messages_total', { strategy: 'seal' }), sealedBefore + 1);
  });

  it('tells the recipient until when the message can be read when the seal answer has an end date', async () => {
    const notificationOf = async (messageId: string) => {
      const { envelopeId } = await intake.accept({
        channel: 'smtp',
        sender: 'alice@sender.example',
        recipients: ['bo@rcpt.example'],
        payload: confidential(messageId, 'bo@rcpt.example'),
      });
      const history = await settled(exchange, envelopeId, 'delivered');
      const sealedId = /sealed as ([0-9a-f-]{36})/.exec(history.at(-1)!.detail!)![1]!;
      const sent = sink.messages.find((m) =>
        m.raw.toString().toLowerCase().includes(`x-sealpost-sealed-id: ${sealedId}`),
      );
      assert.ok(sent, 'the notification');
      return simpleParser(sent.raw);
    };
    seal.expiresAt = '2027-01-31T16:00:00.000Z';
    const ending = await notificationOf('<sealed-ends@sender.example>');
    const line = 'You can read it until January 31, 2027 at 4:00 PM UTC.';
    assert.match(ending.text ?? '', /\/m\/[0-9a-f-]{36}\n\nYou can read it until January 31, 2027 at 4:00 PM UTC\.\n/);
    assert.ok(String(ending.html).includes(`<p>${line}</p>`), String(ending.html));

    seal.expiresAt = undefined;
    const lasting = await notificationOf('<sealed-lasts@sender.example>');
    assert.doesNotMatch(lasting.text ?? '', /You can read it until/);
  });

  it('fails at once and bounces when the seal service refuses the message (400)', async () => {
    seal.respond = () => 400;
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients: ['bo@rcpt.example'],
      payload: confidential('<sealed-400@sender.example>'),
    });
    const history = await settled(exchange, envelopeId, 'failed');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'failed', 'bounced'],
    );
    assert.match(history[3]!.detail!, /^permanent failure \(seal\): seal service answered 400: not a MIME message$/);
    await sink.waitUntil(
      () => sink.messages.some((m) => m.from === '' && m.raw.includes('<sealed-400@sender.example>')),
      20_000,
      'the bounce',
    );
    const dsn = sink.messages.find((m) => m.from === '' && m.raw.includes('<sealed-400@sender.example>'))!;
    assert.deepEqual(dsn.to, ['alice@sender.example']);
    const perRecipient = [
      'Final-Recipient: rfc822; bo@rcpt.example',
      'Action: failed',
      'Status: 5.6.0',
      'Diagnostic-Code: x-sealpost; seal service 400 not a MIME message',
    ].join('\r\n');
    assert.ok(dsn.raw.toString().includes(perRecipient), dsn.raw.toString());
    assert.equal(
      sink.messages.filter((m) => m.to.includes('bo@rcpt.example') && m.raw.includes('sealed-400')).length,
      0,
      'no notification',
    );
  });

  it('retries when the seal service is unavailable (503) and seals once it answers', async () => {
    seal.respond = (_id, attempt) => (attempt === 1 ? 503 : 201);
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients: ['bo@rcpt.example'],
      payload: confidential('<sealed-503@sender.example>'),
    });
    const history = await settled(exchange, envelopeId, 'delivered');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'retrying', 'delivering', 'delivered'],
    );
    assert.match(history[3]!.detail!, /seal service answered 503: IPFS cluster unavailable/);
    assert.equal(seal.calls.filter((c) => c.headers['x-sealpost-envelope-id'] === envelopeId).length, 2);
  });

  it('does not repeat a finished path when a later path of the same message is retried', async () => {
    seal.respond = (_id, attempt) => (attempt === 1 ? 503 : 201);
    const raw = confidential('<both-paths@sender.example>', 'bo@rcpt.example');
    const { envelopeId } = await intake.accept({
      channel: 'json',
      sender: 'alice@sender.example',
      recipients: ['bo@rcpt.example'],
      payload: raw,
    });
    const history = await settled(exchange, envelopeId, 'delivered');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'retrying', 'delivering', 'delivered'],
    );
    assert.match(history[5]!.detail!, /^smtp: done in an earlier attempt; seal: sealed as /);
    const relayed = sink.messages.filter((m) => m.raw.equals(raw));
    assert.equal(relayed.length, 1, 'the smtp copy went out once');
  });
});

describe('delivery on the embedded default (no OUTBOUND_SMTP_URL)', () => {
  let seal: Awaited<ReturnType<typeof startSealStandIn>>;
  let exchange: ServiceUnderTest;
  let intake: Intake;

  before(async () => {
    seal = await startSealStandIn();
    exchange = await startServiceForTest(exchangeService, {
      env: {
        SEAL_URL: seal.url,
        NOTIFY_FROM: 'Sealpost <notify@sealpost.test>',
        DELIVERY_POLL_INTERVAL: '25ms',
        LOG_LEVEL: 'info',
      },
    });
    const rules = new RuleStore(exchangeDb(exchange));
    await rules.create({
      name: 'seal',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
    });
    await rules.create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'json' }, outbound: ['smtp'] },
    });
    intake = intakeFor(exchange);
  });
  after(async () => {
    await exchange?.stop();
    seal?.server?.close();
  });

  const outbox = () => join(exchange.config.dataDir, 'outbox');
  const emlFiles = async () => (await readdir(outbox()).catch(() => [])).filter((name) => name.endsWith('.eml'));

  it('writes the notification to the outbox folder and logs the reader link', async () => {
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients: ['bo@rcpt.example'],
      payload: confidential('<outbox-seal@sender.example>'),
    });
    const history = await settled(exchange, envelopeId, 'delivered');
    const sealedId = /sealed as ([0-9a-f-]{36})/.exec(history.at(-1)!.detail!)![1]!;
    const link = `http://auth.sealpost.test/m/${sealedId}`;
    const logged = exchange.logs.find((line) => line.envelopeId === envelopeId && line.link === link);
    assert.ok(logged, 'the reader link is logged');
    assert.equal(logged.level, 30, 'at info level');

    const files = await Promise.all((await emlFiles()).map((name) => readFile(join(outbox(), name))));
    // Quoted-printable writes the link's `=` as `=3D`: look for the id.
    const notification = files.find((file) => file.includes(`/m/${sealedId}`));
    assert.ok(notification, 'a .eml file with the link');
    assert.match(
      notification.toString(),
      /^Return-Path: <notify@sealpost\.test>\r\nX-Sealpost-Envelope-To: bo@rcpt\.example\r\n/,
    );
    const mail = await simpleParser(notification);
    assert.equal(mail.subject, 'A sealed message from Alice <alice@sender.example> is waiting for you');
  });

  it('writes relayed messages to the outbox byte for byte after the envelope lines', async () => {
    const raw = sampleMessage({
      from: 'bo@rcpt.example',
      to: 'alice@sender.example',
      subject: 'Re: figures',
      messageId: '<outbox-relay@rcpt.example>',
    });
    const { envelopeId } = await intake.accept({
      channel: 'json',
      sender: 'bo@rcpt.example',
      recipients: ['alice@sender.example'],
      payload: raw,
    });
    await settled(exchange, envelopeId, 'delivered');
    const files = await Promise.all((await emlFiles()).map((name) => readFile(join(outbox(), name))));
    const relayed = files.find((file) => file.includes('<outbox-relay@rcpt.example>'));
    assert.ok(relayed);
    const head = 'Return-Path: <bo@rcpt.example>\r\nX-Sealpost-Envelope-To: alice@sender.example\r\n';
    assert.equal(relayed.subarray(0, head.length).toString(), head);
    assert.ok(relayed.subarray(head.length).equals(raw));
    assert.deepEqual(
      (await readdir(outbox())).filter((name) => !name.endsWith('.eml')),
      ['.tmp'],
      'no partial files beside the messages',
    );
  });
});
