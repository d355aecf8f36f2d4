import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RuleStore } from '../../src/exchange/rules/store.ts';
import { exchangeService } from '../../src/exchange/service.ts';
import { envelopeCount, eventually, exchangeDb, payloadKeys } from '../support/exchange-delivery.ts';
import { createS3ObjectStore } from '../../src/kernel/objects/s3.ts';
import { startS3Server, uniqueBucket, type S3TestServer } from '../support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../support/services.ts';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts';
import { arrivals, numberedMessage, sendOverSmtp, tally } from './smtp-senders.ts';

/**
 * Payload deletions keep up on Swift: 3,000 messages relayed through a real S3 server whose s3api deletes the
 * keys of a DeleteObjects call one by one (bench/s3-deletes.ts), while another instance's intake puts into the
 * same store. Calls of 1,000 keys (S3's maximum, the old size) outlived the client's 30 s socket limit here,
 * each leaving its keys to the sweep with a warning per message; calls of 100 end in their time, and nothing
 * is logged above info.
 */
const MESSAGES = 3000;
const CONNECTIONS = 16;

/** numberedMessage grown to ~10 KiB, the size the benchmarks use: each put and delete costs Swift more. */
function message(index: number): { messageId: string; raw: Buffer } {
  const { messageId, raw } = numberedMessage('deletions', index);
  const line = `${'-'.repeat(76)}\r\n`;
  return { messageId, raw: Buffer.concat([raw, Buffer.from(line.repeat(120))]) };
}

describe('payload deletions on Swift under load', { timeout: 600_000 }, () => {
  let s3: S3TestServer;
  let sink: SmtpSink;
  let exchange: ServiceUnderTest | undefined;
  before(async () => {
    [s3, sink] = await Promise.all([startS3Server(), startSmtpSink()]);
  });
  after(async () => {
    await exchange?.stop();
    await sink?.close();
    await s3?.stop();
  });

  it(`deletes the payloads of ${MESSAGES} delivered messages with no timeout and no warning`, async (t) => {
    exchange = await startServiceForTest(exchangeService, {
      s3,
      env: { LOG_LEVEL: 'info', DELIVERY_POLL_INTERVAL: '50ms', OUTBOUND_SMTP_URL: sink.url },
    });
    await new RuleStore(exchangeDb(exchange)).create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    });
    // Another instance's intake on the same store, until the deletions are done: puts of the same size.
    const neighbour = createS3ObjectStore({ ...s3, bucket: uniqueBucket('neighbour'), createBucket: true });
    await neighbour.ensureBucket();
    let neighbourDone = false;
    let neighbourPuts = 0;
    const neighbourPutting = Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        for (let i = 0; !neighbourDone; i++) {
          await neighbour.put(`load/${lane}/${i}`, message(i).raw);
          neighbourPuts++;
        }
      }),
    );
    const started = Date.now();
    const sent = await sendOverSmtp({
      port: Number(new URL(exchange.service.listening.smtp!).port),
      connections: CONNECTIONS,
      messages: Array.from({ length: MESSAGES }, (_, i) => message(i)),
    });
    const counts = tally(sent);
    assert.equal(counts.queued, MESSAGES, `every message accepted: ${JSON.stringify(counts)}`);
    const accepted = Date.now();

    const db = exchangeDb(exchange);
    await eventually(
      'every envelope delivered and removed',
      () => envelopeCount(db),
      (n) => n === 0,
      300_000,
    );
    await eventually(
      'no payload left',
      () => payloadKeys(exchange!.objects),
      (keys) => keys.length === 0,
      300_000,
    );
    assert.equal(arrivals(sink.messages).size, MESSAGES, 'every message arrived');
    neighbourDone = true;
    await neighbourPutting;
    await neighbour.close();

    const warnings = exchange.logs.filter((line) => Number(line.level) >= 40);
    assert.deepEqual(
      warnings.map((line) => `${line.msg} ${JSON.stringify(line.err ?? '')}`.slice(0, 300)),
      [],
      'nothing logged above info: no deletion timed out or failed',
    );
    t.diagnostic(
      `${MESSAGES} messages accepted in ${((accepted - started) / 1000).toFixed(0)} s; ` +
        `delivered and every payload deleted ${((Date.now() - accepted) / 1000).toFixed(0)} s later; ` +
        `${neighbourPuts} puts of another instance beside`,
    );
  });
});
