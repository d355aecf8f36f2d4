import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { simpleParser } from 'mailparser';
import { RuleStore } from '../../src/exchange/rules/store.ts';
import { exchangeService } from '../../src/exchange/service.ts';
import { sealService } from '../../src/seal/service.ts';
import type { SealTables } from '../../src/seal/tables.ts';
import { eventually, exchangeDb, metric, settled, statusHistory } from '../support/exchange-delivery.ts';
import { freePort } from '../support/ports.ts';
import { createTestDatabase } from '../support/postgres.ts';
import { standInEnv, startStandIn, TEST_MASTER_KEY, type StandIn } from '../support/seal.ts';
import { startServiceForTest, type ServiceUnderTest } from '../support/services.ts';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts';
import { numberedMessage, sendOverSmtp, tally } from './smtp-senders.ts';

/**
 * Messages sent while the seal service is down. 20 over 4 connections: every one must be seen waiting
 * and then sealed (an IPFS add and pin each), which takes a few seconds on 2 cores, not more.
 */
const MESSAGES = 20;
const CONNECTIONS = 4;
const READER = 'https://read.sealpost.test';

describe('a seal-service outage', { timeout: 120_000 }, () => {
  let standIn: StandIn;
  let sink: SmtpSink;
  let sealDatabase: { url: string; drop(): Promise<void> };
  let sealPort: number;
  let seal: ServiceUnderTest | undefined;
  let exchange: ServiceUnderTest | undefined;

  /** The real seal service on its fixed port and database, so that a restart is the same service again. */
  const startSeal = () =>
    startServiceForTest(sealService, {
      databaseUrl: sealDatabase.url,
      env: {
        SEAL_MASTER_KEY: TEST_MASTER_KEY,
        SEAL_PORT: String(sealPort),
        AUTH_PUBLIC_URL: READER,
        LOG_LEVEL: 'warn',
        ...standInEnv(standIn),
      },
    });

  before(async () => {
    [standIn, sink, sealDatabase, sealPort] = await Promise.all([
      startStandIn(),
      startSmtpSink(),
      createTestDatabase('faults_seal'),
      freePort(),
    ]);
    seal = await startSeal();
    exchange = await startServiceForTest(exchangeService, {
      env: {
        LOG_LEVEL: 'warn',
        SEAL_URL: `http://127.0.0.1:${sealPort}`,
        OUTBOUND_SMTP_URL: sink.url,
        NOTIFY_FROM: 'Sealpost <notify@sealpost.test>',
        DELIVERY_POLL_INTERVAL: '50ms',
        // Quick retries that cannot run out during the outage (50 retries, all but the first few 1 s apart: over 40 s).
        DELIVERY_RETRY_BASE: '200ms',
        DELIVERY_RETRY_MAX: '1s',
        DELIVERY_MAX_RETRIES: '50',
      },
    });
    await new RuleStore(exchangeDb(exchange)).create({
      name: 'seal inbound mail',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
    });
  });
  after(async () => {
    await exchange?.stop();
    await seal?.stop();
    await sink?.close();
    await standIn?.close();
    await sealDatabase?.drop();
  });

  it('keeps messages `retrying` while the seal service is down, seals and notifies once it is back', async (t) => {
    const port = Number(new URL(exchange!.service.listening.smtp!).port);
    const sealed = (database: ServiceUnderTest) => database.database.db.withSchema('seal') as Kysely<SealTables>;

    // The path works while the service is up.
    const [first] = await sendOverSmtp({ port, connections: 1, messages: [numberedMessage('seal-up', 0)] });
    assert.equal(first!.outcome, 'queued', first!.reply);
    await settled(exchange!, first!.envelopeId!, 'delivered');
    assert.equal(sink.messages.length, 1, 'one notification while the seal service is up');

    await seal!.stop();
    seal = undefined;
    const sent = await sendOverSmtp({
      port,
      connections: CONNECTIONS,
      messages: Array.from({ length: MESSAGES }, (_, i) => numberedMessage('seal-down', i)),
    });
    assert.deepEqual(
      tally(sent),
      { queued: MESSAGES, refused: 0, unanswered: 0, unsent: 0 },
      'the exchange takes mail while the seal service is down',
    );
    const ids = sent.map((m) => m.envelopeId!);

    // Each one is tried, fails, waits, and is tried again: at least two `retrying` entries in its history.
    for (const id of ids) {
      const history = await eventually(
        `${id} retried during the outage`,
        () => statusHistory(exchange!, id),
        (statuses) => statuses.filter((s) => s.status === 'retrying').length >= 2,
        30_000,
      );
      assert.match(history.find((s) => s.status === 'retrying')!.detail!, /seal service unreachable/);
      assert.ok(
        !history.some((s) => s.status === 'delivered' || s.status === 'failed'),
        `${id} neither delivered nor failed while sealing is down`,
      );
    }
    assert.equal(sink.messages.length, 1, 'no notification without a seal');

    // The same service on the same port and database comes back; nothing else is touched.
    const resumed = await startSeal();
    seal = resumed;
    for (const id of ids) {
      const history = await settled(exchange!, id, 'delivered');
      assert.match(history.at(-1)!.detail!, /sealed as [0-9a-f-]{36}, 1 recipient\(s\) notified/);
    }
    assert.equal(await metric(exchange!, 'failed_messages_total'), 0, 'no message failed');

    // One notification per message, with the reader link of the record sealed for that envelope, whose
    // content is the message as it was accepted.
    const records = await sealed(resumed)
      .selectFrom('sealed_messages')
      .select(['id', 'envelope_id'])
      .where('envelope_id', 'in', ids)
      .execute();
    assert.equal(records.length, MESSAGES, 'every envelope was sealed once');
    const notifications = await Promise.all(sink.messages.slice(1).map((m) => simpleParser(m.raw)));
    assert.equal(notifications.length, MESSAGES, 'one notification per message');
    const notified = new Set(notifications.map((n) => n.headers.get('x-sealpost-sealed-id')));
    for (const [i, record] of records.entries()) {
      assert.ok(notified.has(record.id), `a notification for sealed message ${record.id}`);
      const notification = notifications.find((n) => n.headers.get('x-sealpost-sealed-id') === record.id)!;
      assert.ok(notification.text?.includes(`${READER}/m/${record.id}`), 'the notification carries the reader link');
      assert.deepEqual(
        notification.to && 'value' in notification.to ? notification.to.value.map((a) => a.address) : [],
        ['bob@rcpt.example'],
      );
      if (i < 3) {
        const content = await fetch(`${resumed.url}/v1/sealed/${record.id}/content`, {
          headers: { authorization: `Bearer ${resumed.serviceToken}` },
        });
        assert.equal(content.status, 200);
        const message = sent.find((m) => m.envelopeId === record.envelope_id)!;
        assert.ok(
          Buffer.from(await content.arrayBuffer())
            .subarray(-message.raw.length)
            .equals(message.raw),
          'the sealed content is the message as accepted',
        );
      }
    }
    const retries = await Promise.all(
      ids.map(async (id) => (await statusHistory(exchange!, id)).filter((s) => s.status === 'retrying').length),
    );
    t.diagnostic(
      `${MESSAGES} messages waited through the outage ` +
        `(${Math.min(...retries)}–${Math.max(...retries)} retries each), then sealed and notified`,
    );
  });
});
