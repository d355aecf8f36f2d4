import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { parseDuration } from '../../kernel/duration.ts';
import { payloadKey } from '../handoff.ts';
import type { MessageIntake } from '../inbound/accept.ts';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import {
  eventually,
  exchangeDb,
  intakeFor,
  metric,
  sampleMessage,
  settled,
  statusHistory,
} from '../../../test/support/exchange-delivery.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { startSmtpSink, type SinkMessage, type SmtpSink } from '../../../test/support/smtp-sink.ts';

const MAX_RETRIES = 3;

describe('delivery through the smtp strategy', () => {
  let s3: S3TestServer;
  let sink: SmtpSink;
  let exchange: ServiceUnderTest;
  let intake: MessageIntake;
  /** Attempts seen per recipient at the sink, for recipients that fail a given number of times. */
  const seen = new Map<string, number>();

  before(async () => {
    [s3, sink] = await Promise.all([startS3Server(), startSmtpSink()]);
    exchange = await startServiceForTest(exchangeService, {
      s3,
      env: {
        OUTBOUND_SMTP_URL: sink.url,
        DELIVERY_RETRY_BASE: '50ms',
        DELIVERY_RETRY_MAX: '300ms',
        DELIVERY_MAX_RETRIES: String(MAX_RETRIES),
        DELIVERY_POLL_INTERVAL: '25ms',
        DELIVERY_CONCURRENCY: '4',
        // Short, so that the retention sweep (once per lease) runs within the test.
        DELIVERY_LEASE: '1s',
        SMTP_HOSTNAME: 'mx.sealpost.test',
      },
    });
    const rules = new RuleStore(exchangeDb(exchange));
    await rules.create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    });
    intake = intakeFor(exchange);
  });
  after(async () => {
    await exchange?.stop();
    await Promise.all([sink?.close(), s3?.stop()]);
  });
  beforeEach(() => {
    seen.clear();
    // Recipients say how they fail: nobody@ always 550, busy@ always 450, flaky-N@ 450 for N attempts.
    sink.failWith = (recipient) => {
      const attempts = (seen.get(recipient) ?? 0) + 1;
      seen.set(recipient, attempts);
      if (recipient.startsWith('nobody@') || recipient.startsWith('ghost@')) return 550;
      if (recipient.startsWith('busy@')) return 450;
      const flaky = /^flaky-(\d+)@/.exec(recipient);
      if (flaky && attempts <= Number(flaky[1])) return 450;
      return undefined;
    };
    // Content the relay refuses only once it has read it: spam-trap@ gets 554 at the end of DATA.
    sink.refuseData = (message) =>
      message.to.some((to) => to.startsWith('spam-trap@'))
        ? { code: 554, text: '5.7.1 message refused as spam' }
        : undefined;
  });

  const bouncesTo = (address: string): SinkMessage[] =>
    sink.messages.filter((m) => m.from === '' && m.to.includes(address));

  it('relays the message byte for byte to every envelope recipient, then deletes payload and envelope', async () => {
    const before = {
      count: await metric(exchange, 'delivered_messages_total', { strategy: 'smtp' }),
      bytes: await metric(exchange, 'delivered_messages_total_size_bytes', { strategy: 'smtp' }),
    };
    const raw = sampleMessage({
      from: 'Alice <alice@sender.example>',
      to: 'bob@rcpt.example',
      subject: 'Byte for byte',
      messageId: '<byte-for-byte@sender.example>',
      // What SMTP makes delicate: a line that starts with a dot (dot-stuffing), a lone dot, 8-bit text.
      body: ['.a line with a leading dot', '.', 'Grüße aus Zürich', 'x'.repeat(900)],
    });
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients: ['bob@rcpt.example', 'hidden-bcc@rcpt.example'],
      payload: raw,
    });

    const history = await settled(exchange, envelopeId, 'delivered');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'delivered'],
    );
    assert.match(history[3]!.detail!, /^smtp: 250 /);

    const received = sink.messages.filter((m) => m.messageId === '<byte-for-byte@sender.example>');
    assert.equal(received.length, 1);
    assert.ok(received[0]!.raw.equals(raw), 'the relay received exactly the stored bytes');
    assert.equal(received[0]!.from, 'alice@sender.example');
    assert.deepEqual(received[0]!.to, ['bob@rcpt.example', 'hidden-bcc@rcpt.example']);

    assert.equal(await exchange.objects.head(payloadKey(envelopeId)), undefined, 'payload deleted');
    assert.equal(await metric(exchange, 'delivered_messages_total', { strategy: 'smtp' }), before.count + 1);
    assert.equal(
      await metric(exchange, 'delivered_messages_total_size_bytes', { strategy: 'smtp' }),
      before.bytes + raw.length,
    );
  });

  it('hands the relay the envelope as received, recipients differing only in case included', async () => {
    const recipients = ['Carol@rcpt.example', 'carol@rcpt.example'];
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'Alice@sender.example',
      recipients,
      payload: sampleMessage({
        from: 'alice@sender.example',
        to: 'carol@rcpt.example',
        subject: 'Envelope as received',
        messageId: '<envelope-as-received@sender.example>',
      }),
    });
    await settled(exchange, envelopeId, 'delivered');
    const received = sink.messages.filter((m) => m.messageId === '<envelope-as-received@sender.example>');
    assert.equal(received.length, 1);
    assert.equal(received[0]!.from, 'Alice@sender.example');
    // Each address as its own RCPT TO (the sink's session keeps one per address, ignoring case).
    assert.deepEqual([...seen.keys()], recipients);
  });

  it('retries a temporarily refused message with growing delays and then delivers it', async () => {
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients: ['flaky-2@rcpt.example'],
      payload: sampleMessage({
        from: 'alice@sender.example',
        to: 'flaky-2@rcpt.example',
        subject: 'Flaky',
        messageId: '<flaky@sender.example>',
      }),
    });
    const history = await settled(exchange, envelopeId, 'delivered');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'retrying', 'delivering', 'retrying', 'delivering', 'delivered'],
    );
    const delays = history
      .filter((s) => s.status === 'retrying')
      .map((s) => Number(parseDuration(/ in (\S+)$/.exec(s.detail!)![1]!)) / 1e6);
    // Base 50ms, doubling, up to 20 % longer at random: 50–60 ms, then 100–120 ms.
    assert.ok(delays[0]! >= 50 && delays[0]! <= 60, `first retry after DELIVERY_RETRY_BASE: ${delays}`);
    assert.ok(delays[1]! >= 100 && delays[1]! <= 120 && delays[1]! > delays[0]!, `the delay grows: ${delays}`);
    assert.match(
      history[3]!.detail!,
      /attempt 1 failed \(smtp\): relay: 450 4\.2\.0 try again later; retry 1 of 3 in /,
    );
    assert.equal(sink.messages.filter((m) => m.messageId === '<flaky@sender.example>').length, 1);
    // Each retry is an info line (pino level 30), the delivery itself a debug line (20): at LOG_LEVEL=info
    // a message that went out leaves no line.
    const lines = exchange.logs.filter((line) => line.envelopeId === envelopeId);
    assert.deepEqual(
      lines.map((line) => [line.level, line.msg, line.attempt]),
      [
        [30, 'delivery failed; will retry', 1],
        [30, 'delivery failed; will retry', 2],
        [20, 'delivered', 3],
      ],
    );
  });

  it('fails after DELIVERY_MAX_RETRIES temporary refusals and sends the sender one RFC 3464 bounce', async () => {
    const failedBefore = await metric(exchange, 'failed_messages_total');
    const bouncesBefore = await metric(exchange, 'bounce_replies_total');
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'carol@sender.example',
      recipients: ['busy@rcpt.example'],
      payload: sampleMessage({
        from: 'carol@sender.example',
        to: 'busy@rcpt.example',
        subject: 'Never gets through',
        messageId: '<busy@sender.example>',
      }),
    });
    const history = await settled(exchange, envelopeId, 'failed');
    assert.equal(history.filter((s) => s.status === 'delivering').length, 1 + MAX_RETRIES);
    assert.equal(history.filter((s) => s.status === 'retrying').length, MAX_RETRIES);
    assert.deepEqual(
      history.slice(-2).map((s) => s.status),
      ['failed', 'bounced'],
    );
    assert.match(history.at(-2)!.detail!, /^retries exhausted after attempt 4 \(smtp\): relay: 450/);
    const bounceId = /^bounce ([0-9a-f-]{36}) queued to <carol@sender\.example>$/.exec(history.at(-1)!.detail!)?.[1];
    assert.ok(bounceId, history.at(-1)!.detail!);

    await settled(exchange, bounceId, 'delivered');
    const bounces = bouncesTo('carol@sender.example');
    assert.equal(bounces.length, 1, 'exactly one bounce');
    const dsn = bounces[0]!.raw.toString();
    const parsed = await simpleParser(bounces[0]!.raw);
    const contentType = parsed.headers.get('content-type') as { value: string; params: Record<string, string> };
    assert.equal(contentType.value, 'multipart/report');
    assert.equal(contentType.params['report-type'], 'delivery-status');
    assert.match(parsed.to && !Array.isArray(parsed.to) ? parsed.to.text : '', /carol@sender\.example/);
    assert.equal(parsed.headers.get('auto-submitted'), 'auto-replied');
    assert.match(dsn, /\r\nContent-Type: message\/delivery-status\r\n/);
    assert.match(dsn, /\r\nReporting-MTA: dns; mx\.sealpost\.test\r\n/);
    assert.match(dsn, /\r\nArrival-Date: \w{3}, \d{1,2} \w{3} \d{4} \d\d:\d\d:\d\d \+0000\r\n/);
    assert.match(dsn, /\r\nFinal-Recipient: rfc822; busy@rcpt\.example\r\nAction: failed\r\nStatus: 4\.4\.7\r\n/);
    assert.match(dsn, /\r\nDiagnostic-Code: smtp; 450 4\.2\.0 try again later\r\n/);
    assert.match(dsn, /\r\nContent-Type: text\/rfc822-headers\r\n[\s\S]*Subject: Never gets through/);

    assert.equal(await metric(exchange, 'failed_messages_total'), failedBefore + 1);
    assert.equal(await metric(exchange, 'bounce_replies_total'), bouncesBefore + 1);
    assert.equal(await exchange.objects.head(payloadKey(envelopeId)), undefined);
  });

  it('fails at once on a 5xx from the relay and bounces once with the relay’s status', async () => {
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'dave@sender.example',
      recipients: ['nobody@rcpt.example'],
      payload: sampleMessage({
        from: 'dave@sender.example',
        to: 'nobody@rcpt.example',
        subject: 'To nobody',
        messageId: '<nobody@sender.example>',
      }),
    });
    const history = await settled(exchange, envelopeId, 'failed');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'failed', 'bounced'],
    );
    assert.match(history[3]!.detail!, /^permanent failure \(smtp\): relay: 550 5\.1\.1 mailbox unavailable/);
    const bounceId = /^bounce ([0-9a-f-]{36})/.exec(history[4]!.detail!)![1]!;
    await settled(exchange, bounceId, 'delivered');
    const bounces = bouncesTo('dave@sender.example');
    assert.equal(bounces.length, 1);
    const dsn = bounces[0]!.raw.toString();
    const perRecipient = [
      'Final-Recipient: rfc822; nobody@rcpt.example',
      'Action: failed',
      'Status: 5.1.1',
      'Remote-MTA: dns; [127.0.0.1]',
      'Diagnostic-Code: smtp; 550 5.1.1 mailbox unavailable',
    ].join('\r\n');
    assert.ok(dsn.includes(perRecipient), dsn);
    assert.match(dsn, /In-Reply-To: <nobody@sender\.example>/);
  });

  it('fails at once on a 5xx at the end of DATA and bounces once with the relay’s status', async () => {
    const [failedBefore, bouncesBefore] = [
      await metric(exchange, 'failed_messages_total'),
      await metric(exchange, 'bounce_replies_total'),
    ];
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'spammer@sender.example',
      recipients: ['spam-trap@rcpt.example', 'other@rcpt.example'],
      payload: sampleMessage({
        from: 'spammer@sender.example',
        to: 'spam-trap@rcpt.example',
        subject: 'Buy now',
        messageId: '<spam@sender.example>',
      }),
    });
    const history = await settled(exchange, envelopeId, 'failed');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'failed', 'bounced'],
      'no retry',
    );
    assert.match(history[3]!.detail!, /^permanent failure \(smtp\): relay: 554 5\.7\.1 message refused as spam/);
    const bounceId = /^bounce ([0-9a-f-]{36})/.exec(history[4]!.detail!)![1]!;
    const bounceHistory = await settled(exchange, bounceId, 'delivered');
    assert.deepEqual(
      bounceHistory.slice(0, 2).map((s) => [s.status, s.detail!.replace(/^\d+/, 'N')]),
      [
        ['accepted', 'N bytes over smtp, a bounce of ours'],
        ['routed', 'to smtp, without a rule (a bounce)'],
      ],
    );
    const bounces = bouncesTo('spammer@sender.example');
    assert.equal(bounces.length, 1, 'exactly one bounce');
    const dsn = bounces[0]!.raw.toString();
    for (const recipient of ['spam-trap@rcpt\\.example', 'other@rcpt\\.example']) {
      assert.match(
        dsn,
        new RegExp(`Final-Recipient: rfc822; ${recipient}\\r\\nAction: failed\\r\\nStatus: 5\\.7\\.1\\r\\n`),
        'the whole message was refused',
      );
    }
    assert.match(dsn, /Diagnostic-Code: smtp; 554 5\.7\.1 message refused as spam/);
    assert.equal(
      sink.messages.filter((m) => m.messageId === '<spam@sender.example>').length,
      0,
      'the relay kept nothing',
    );
    assert.equal(await metric(exchange, 'failed_messages_total'), failedBefore + 1);
    assert.equal(await metric(exchange, 'bounce_replies_total'), bouncesBefore + 1);
    assert.equal(await exchange.objects.head(payloadKey(envelopeId)), undefined, 'payload deleted');
  });

  it('never bounces a message from the null sender', async () => {
    const bouncesBefore = await metric(exchange, 'bounce_replies_total');
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: '',
      recipients: ['nobody@rcpt.example'],
      payload: sampleMessage({
        from: 'MAILER-DAEMON@elsewhere.example',
        to: 'nobody@rcpt.example',
        subject: 'Notice',
        messageId: '<null-sender@elsewhere.example>',
      }),
    });
    const history = await settled(exchange, envelopeId, 'failed');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'failed'],
    );
    assert.equal(await metric(exchange, 'bounce_replies_total'), bouncesBefore);
  });

  it('does not bounce a bounce that cannot be delivered: it goes to the postmaster instead', async () => {
    const bouncesBefore = await metric(exchange, 'bounce_replies_total');
    // The sender's own mailbox refuses mail, so the bounce to it fails as well.
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'ghost@sender.example',
      recipients: ['nobody@rcpt.example'],
      payload: sampleMessage({
        from: 'ghost@sender.example',
        to: 'nobody@rcpt.example',
        subject: 'Boo',
        messageId: '<ghost@sender.example>',
      }),
    });
    const history = await settled(exchange, envelopeId, 'failed');
    const bounceId = /^bounce ([0-9a-f-]{36})/.exec(history.at(-1)!.detail!)![1]!;
    const bounceHistory = await settled(exchange, bounceId, 'failed');
    assert.deepEqual(
      bounceHistory.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'failed', 'bounced'],
    );
    // BOUNCE_NOTICE_RECIPIENT unset: the postmaster of NOTIFY_FROM's domain (no-reply@localhost here).
    assert.match(bounceHistory.at(-1)!.detail!, /^notice [0-9a-f-]{36} queued to <postmaster@localhost>$/);
    assert.equal(await metric(exchange, 'bounce_replies_total'), bouncesBefore + 1, 'one bounce, none for the bounce');
    assert.equal(
      sink.messages.filter((m) => m.from === '').filter((m) => m.to.includes('ghost@sender.example')).length,
      0,
    );
    await sink.waitUntil(
      () => bouncesTo('postmaster@localhost').some((m) => m.raw.includes('Final-Recipient: rfc822; ghost@sender')),
      20_000,
      'the notice to the postmaster',
    );
  });

  it('delivers to the recipients the relay accepts and bounces only the refused one', async () => {
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'erin@sender.example',
      recipients: ['ok@rcpt.example', 'nobody@rcpt.example'],
      payload: sampleMessage({
        from: 'erin@sender.example',
        to: 'ok@rcpt.example, nobody@rcpt.example',
        subject: 'Half',
        messageId: '<half@sender.example>',
      }),
    });
    const history = await settled(exchange, envelopeId, 'delivered');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'delivered', 'bounced'],
    );
    assert.match(history[3]!.detail!, /refused: nobody@rcpt\.example$/);
    const delivered = sink.messages.filter((m) => m.messageId === '<half@sender.example>');
    assert.deepEqual(
      delivered.map((m) => m.to),
      [['ok@rcpt.example']],
    );
    await eventually(
      'the bounce reaches the sender',
      async () => bouncesTo('erin@sender.example').length,
      (n) => n === 1,
    );
    const dsn = bouncesTo('erin@sender.example')[0]!.raw.toString();
    assert.match(dsn, /Final-Recipient: rfc822; nobody@rcpt\.example\r\nAction: failed\r\nStatus: 5\.1\.1/);
    assert.doesNotMatch(dsn, /Final-Recipient: rfc822; ok@rcpt\.example/);
  });

  it('keeps the history of delivered messages readable with the admin token as well', async () => {
    const { envelopeId } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients: ['bob@rcpt.example'],
      payload: sampleMessage({
        from: 'alice@sender.example',
        to: 'bob@rcpt.example',
        subject: 'Admin view',
        messageId: '<admin@sender.example>',
      }),
    });
    await settled(exchange, envelopeId, 'delivered');
    const asAdmin = await statusHistory(exchange, envelopeId, exchange.adminToken);
    assert.deepEqual(
      asAdmin.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'delivered'],
    );
    assert.ok(asAdmin.every((s) => !Number.isNaN(Date.parse(s.at))));
  });

  it('finishes envelopes whose clean-up was cut short: sends the missing bounce, deletes payload and row', async () => {
    // As a crash would leave them: status written, nothing after it done.
    const leftovers = [
      {
        id: randomUUID(),
        status: 'failed' as const,
        sender: 'frank@sender.example',
        report: {
          reason: 'The relay refused the message.',
          recipients: [
            { recipient: 'nobody@rcpt.example', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 mailbox unavailable' },
          ],
        },
      },
      { id: randomUUID(), status: 'delivered' as const, sender: 'gina@sender.example', report: null },
    ];
    for (const leftover of leftovers) {
      const raw = sampleMessage({
        from: leftover.sender,
        to: 'nobody@rcpt.example',
        subject: 'Left over',
        messageId: `<${leftover.id}@sender.example>`,
      });
      await exchange.objects.put(payloadKey(leftover.id), raw);
      await exchangeDb(exchange)
        .insertInto('envelopes')
        .values({
          id: leftover.id,
          channel: 'smtp',
          sender: leftover.sender,
          recipients: ['nobody@rcpt.example'],
          size: raw.length,
          payload_key: payloadKey(leftover.id),
          rule_id: null,
          outbound: ['smtp'],
          status: leftover.status,
          attempts: 1,
          lease_until: null,
          last_error: null,
          updated_at: sql<Date>`now() - interval '1 minute'`,
        })
        .execute();
      if (leftover.report) {
        await exchangeDb(exchange)
          .updateTable('envelopes')
          .set({ bounce_report: sql`${JSON.stringify(leftover.report)}::jsonb` })
          .where('id', '=', leftover.id)
          .execute();
      }
    }
    for (const leftover of leftovers) {
      await eventually(
        `${leftover.id} finished by the sweep`,
        async () =>
          (await exchangeDb(exchange)
            .selectFrom('envelopes')
            .select('id')
            .where('id', '=', leftover.id)
            .executeTakeFirst()) === undefined,
        (gone) => gone,
      );
      assert.equal(await exchange.objects.head(payloadKey(leftover.id)), undefined);
    }
    const history = await statusHistory(exchange, leftovers[0]!.id);
    assert.deepEqual(
      history.map((s) => s.status),
      ['bounced'],
    );
    await eventually(
      'the bounce reaches frank',
      async () => bouncesTo('frank@sender.example').length,
      (n) => n === 1,
    );
    assert.match(
      bouncesTo('frank@sender.example')[0]!.raw.toString(),
      /Final-Recipient: rfc822; nobody@rcpt\.example\r\nAction: failed\r\nStatus: 5\.1\.1/,
    );
    assert.equal(bouncesTo('gina@sender.example').length, 0, 'a delivered message is not bounced');
  });
});
