import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import { eventually, exchangeDb, sampleMessage, statusHistory } from '../../../test/support/exchange-delivery.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink.ts';

/** Sends one message over the service's own SMTP port; resolves with the queued id from the 250. */
async function sendOverSmtp(service: ServiceUnderTest, tag: string): Promise<string> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: Number(new URL(service.service.listening.smtp!).port),
    secure: false,
    ignoreTLS: true,
    name: 'test.local',
  });
  try {
    const info = await transport.sendMail({
      envelope: { from: 'alice@sender.example', to: ['bob@rcpt.example'] },
      raw: sampleMessage({
        from: 'alice@sender.example',
        to: 'bob@rcpt.example',
        subject: tag,
        messageId: `<${tag}@sender.example>`,
      }),
    });
    const id = /queued as ([0-9a-f-]{36})/.exec(info.response)?.[1];
    assert.ok(id, info.response);
    return id;
  } finally {
    transport.close();
  }
}

describe('delivery of mail an instance takes: at once, or not at all with DELIVERY_ENABLED=false', () => {
  let sink: SmtpSink;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataDir: string;
  const running: ServiceUnderTest[] = [];
  const start = async (env: Record<string, string>) => {
    // One database and one object folder: every instance reads what another took.
    const service = await startServiceForTest(exchangeService, {
      databaseUrl: database.url,
      env: { OUTBOUND_SMTP_URL: sink.url, SEALPOST_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    });
    running.push(service);
    return service;
  };

  before(async () => {
    [sink, database, dataDir] = await Promise.all([
      startSmtpSink(),
      createTestDatabase('exchange_wake'),
      mkdtemp(join(tmpdir(), 'sealpost-wake-')),
    ]);
  });
  after(async () => {
    for (const service of running.reverse()) await service.stop();
    await sink?.close();
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers a message it takes without waiting for the poll interval', async () => {
    const engine = await start({ DELIVERY_POLL_INTERVAL: '1h' });
    await new RuleStore(exchangeDb(engine)).create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    });
    // The loop's first claim (at start) found nothing: from here on it would sleep for an hour.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const id = await sendOverSmtp(engine, 'at-once');
    await eventually(
      'the message at the sink',
      async () => sink.messages.length,
      (n) => n === 1,
      10_000,
    );
    assert.equal(sink.messages[0]!.messageId, '<at-once@sender.example>');
    await eventually(
      'delivered in the status history',
      () => statusHistory(engine, id),
      (h) => h.some((s) => s.status === 'delivered'),
    );
    await engine.stop();
    running.length = 0;
  });

  it('takes mail but leaves it to an instance that delivers when DELIVERY_ENABLED=false', async () => {
    sink.messages.length = 0;
    const intakeOnly = await start({ DELIVERY_ENABLED: 'false', DELIVERY_POLL_INTERVAL: '20ms' });
    const id = await sendOverSmtp(intakeOnly, 'held');
    // Ten poll intervals: a worker, had the instance started one, would have claimed the mail by then.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(sink.messages.length, 0, 'nothing delivered by the intake-only instance');
    assert.deepEqual(
      (await statusHistory(intakeOnly, id)).map((s) => s.status),
      ['accepted', 'routed'],
    );

    await start({ DELIVERY_POLL_INTERVAL: '50ms' });
    await eventually(
      'delivered by the other instance',
      async () => sink.messages.length,
      (n) => n === 1,
      10_000,
    );
    assert.equal(sink.messages[0]!.messageId, '<held@sender.example>');
  });
});
