import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { RuleStore } from '../../src/exchange/rules/store.ts';
import { exchangeService } from '../../src/exchange/service.ts';
import { refuseConnections } from '../support/db-faults.ts';
import { envelopeCount, eventually, exchangeDb, metric, payloadKeys } from '../support/exchange-delivery.ts';
import { startS3Server, type S3TestServer } from '../support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../support/services.ts';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts';
import { arrivals, numberedMessage, sendOverSmtp, tally, type SentMessage } from './smtp-senders.ts';

/** Clients sending at once: a load that keeps ingest and deliveries busy through the outage. */
const CONNECTIONS = 8;
/**
 * Messages answered 250 before the fault and again after it. ~100 is ~3 s of ingest on the 2-core CI
 * machines (Swift stores ~30 messages/s while the engine delivers): enough that deliveries lag behind
 * and a backlog is waiting when the store goes away, small enough to keep each test near 20 s.
 */
const QUEUED_BEFORE = 100;
const QUEUED_AFTER = 100;
/** 451s to see during the outage before it ends: proof that senders met the outage, not just its edges. */
const REFUSED_DURING = 20;
/** Upper bound of the messages offered, so the senders' loops end even if a phase never comes. */
const MESSAGE_POOL = 4000;
/** Deliveries one instance runs at once (the default); at most these are in flight when a store goes. */
const DELIVERY_CONCURRENCY = 8;

const ENV = {
  LOG_LEVEL: 'warn',
  DELIVERY_CONCURRENCY: String(DELIVERY_CONCURRENCY),
  DELIVERY_POLL_INTERVAL: '50ms',
  // Retries come quickly and never run out during an outage of a few seconds (30 retries, all but the
  // first four of 1 s each, last over 20 s): a message must wait, not fail and bounce.
  DELIVERY_RETRY_BASE: '100ms',
  DELIVERY_RETRY_MAX: '1s',
  DELIVERY_MAX_RETRIES: '30',
  // A delivery cut off by the database outage is taken again 3 s after its last lease renewal.
  DELIVERY_LEASE: '3s',
  // Deliveries read every payload from the store, so that the S3 outage reaches them too (the engine
  // would otherwise send what it accepted from memory, and only its deletes would meet the outage).
  DELIVERY_PAYLOAD_CACHE: '0',
};

interface OutageRun {
  sent: SentMessage[];
  /** When the store came back (Date.now()). */
  restoredAt: number;
  queuedBeforeOutage: Set<string>;
}

/**
 * Sends over CONNECTIONS clients without pause; once QUEUED_BEFORE messages are in, `outage()` takes the
 * store away; once senders have had REFUSED_DURING 451s (and `whileDown` holds, if given) `recover()`
 * brings it back; once QUEUED_AFTER more are in, the senders stop. Nothing restarts Sealpost.
 */
async function sendThroughOutage(
  exchange: ServiceUnderTest,
  tag: string,
  steps: { outage(): Promise<void>; whileDown?: () => Promise<boolean>; recover(): Promise<void> },
): Promise<OutageRun> {
  let phase: 'before' | 'during' | 'after' = 'before';
  const queued = { before: 0, during: 0, after: 0 };
  const refused = { before: 0, during: 0, after: 0 };
  const queuedBeforeOutage = new Set<string>();
  let stop = false;
  const sending = sendOverSmtp({
    port: Number(new URL(exchange.service.listening.smtp!).port),
    connections: CONNECTIONS,
    messages: Array.from({ length: MESSAGE_POOL }, (_, i) => numberedMessage(tag, i)),
    stop: () => stop,
    backoffMs: 20,
    onReply: (message) => {
      if (message.outcome === 'queued') {
        queued[phase]++;
        if (phase === 'before') queuedBeforeOutage.add(message.messageId);
      } else refused[phase]++;
    },
  });
  // Probed by the waits below, so that a wait that fails shows where the senders were.
  const progress = async () => ({ queued: { ...queued }, refused: { ...refused } });
  try {
    await eventually('messages queued before the outage', progress, (p) => p.queued.before >= QUEUED_BEFORE, 60_000);
    phase = 'during';
    await steps.outage();
    await eventually('451s during the outage', progress, (p) => p.refused.during >= REFUSED_DURING, 30_000);
    if (steps.whileDown) await eventually('the outage seen by delivery', steps.whileDown, (seen) => seen, 30_000);
    await steps.recover();
    const restoredAt = Date.now();
    phase = 'after';
    await eventually('messages queued after the recovery', progress, (p) => p.queued.after >= QUEUED_AFTER, 60_000);
    stop = true;
    return { sent: await sending, restoredAt, queuedBeforeOutage };
  } finally {
    stop = true;
    await sending;
  }
}

/**
 * What must hold after any store outage: every 250 delivered, every refusal a 451 that left nothing
 * (no envelope, no status, no delivery; a payload whose envelope write had an unknown outcome only until
 * the orphan sweep removes it), nothing failed or bounced, the bucket empty in the end.
 * Returns the copies beyond the first that arrived at the sink (at-least-once delivery).
 */
async function assertPromisesKept(
  t: TestContext,
  exchange: ServiceUnderTest,
  sink: SmtpSink,
  run: OutageRun,
  what: RegExp,
): Promise<number> {
  const db = exchangeDb(exchange);
  const counts = tally(run.sent);
  assert.equal(counts.unanswered, 0, 'every transaction got its final reply');
  for (const message of run.sent) {
    if (message.outcome === 'refused') assert.match(message.reply!, what, `${message.messageId} refused with 451`);
  }
  assert.ok(counts.refused >= REFUSED_DURING, `the senders met the outage: ${JSON.stringify(counts)}`);

  await eventually(
    'every envelope delivered and removed',
    () => envelopeCount(db),
    (n) => n === 0,
    60_000,
  );
  const byId = arrivals(sink.messages);
  const queued = run.sent.filter((m) => m.outcome === 'queued');
  assert.deepEqual(
    queued.filter((m) => !byId.has(m.messageId)).map((m) => m.messageId),
    [],
    'every message answered 250 was delivered',
  );
  const refused = run.sent.filter((m) => m.outcome === 'refused');
  assert.deepEqual(
    refused.filter((m) => byId.has(m.messageId)).map((m) => m.messageId),
    [],
    'no message answered 451 was delivered',
  );
  assert.equal(byId.size, queued.length, 'the sink got nothing else (no bounce)');
  assert.equal(await metric(exchange, 'failed_messages_total'), 0, 'no message failed');

  // No envelope was ever written for a refused message: the history knows exactly the 250s.
  const histories = await db
    .selectFrom('message_status')
    .select(sql<number>`count(distinct envelope_id)`.as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(histories.n), queued.length, 'status histories exist for the messages answered 250 only');
  const envelopeIds = new Set(queued.map((m) => m.envelopeId));
  const statusIds = await db.selectFrom('message_status').select('envelope_id').distinct().execute();
  assert.ok(
    statusIds.every((row) => envelopeIds.has(row.envelope_id)),
    'every history belongs to a 250',
  );

  await eventually(
    'no payload left in the bucket',
    () => payloadKeys(exchange.objects),
    (keys) => keys.length === 0,
    30_000,
  );

  const extraCopies = [...byId.values()].reduce((sum, n) => sum + n - 1, 0);
  t.diagnostic(
    `sent ${JSON.stringify(counts)}; ` +
      `sink ${sink.messages.length} messages, ${byId.size} distinct, ${extraCopies} extra copies`,
  );
  return extraCopies;
}

describe('store outages under SMTP load', { timeout: 150_000 }, () => {
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

  /** A fresh engine (its own database and bucket) relaying smtp → smtp to the sink. */
  async function startExchange(): Promise<ServiceUnderTest> {
    await exchange?.stop();
    sink.messages.length = 0;
    exchange = await startServiceForTest(exchangeService, { s3, env: { ...ENV, OUTBOUND_SMTP_URL: sink.url } });
    await new RuleStore(exchangeDb(exchange)).create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    });
    return exchange;
  }

  it('answers 451, keeps nothing while S3 is down; delivers all it took once S3 is back, no restart', async (t) => {
    const exchange = await startExchange();
    const db = exchangeDb(exchange);
    let pausedAt = new Date();
    const run = await sendThroughOutage(exchange, 's3-outage', {
      outage: async () => {
        pausedAt = new Date();
        await s3.pause();
      },
      // Deliveries of the backlog failed for the outage and now wait for their retry.
      whileDown: async () =>
        (
          await db
            .selectFrom('message_status')
            .select('id')
            .where('status', '=', 'retrying')
            .where('created_at', '>=', pausedAt)
            .limit(1)
            .execute()
        ).length > 0,
      recover: () => s3.resume(),
    });
    const extraCopies = await assertPromisesKept(
      t,
      exchange,
      sink,
      run,
      /^451 4\.3\.0 Message storage is unavailable; try again later$/,
    );
    // With the database up throughout, every delivery that reached the relay was recorded: no repeats.
    assert.equal(extraCopies, 0, 'no message delivered twice');

    // Delivery came back by itself: envelopes that waited in `retrying` through the outage went out.
    const retried = await db
      .selectFrom('message_status')
      .select('envelope_id')
      .distinct()
      .where('status', '=', 'retrying')
      .execute();
    assert.ok(retried.length > 0, 'some deliveries waited for the store');
    const delivered = await db
      .selectFrom('message_status')
      .select('envelope_id')
      .distinct()
      .where('status', '=', 'delivered')
      .where(
        'envelope_id',
        'in',
        retried.map((r) => r.envelope_id),
      )
      .execute();
    assert.equal(delivered.length, retried.length, 'every delivery that waited was made after the store came back');
    t.diagnostic(`${retried.length} deliveries waited in retrying for S3 and went out after it came back`);
  });

  it('answers 451, keeps nothing while PostgreSQL refuses connections; then delivers by itself', async (t) => {
    const exchange = await startExchange();
    let restore: (() => Promise<void>) | undefined;
    let deliveredAtOutage = 0;
    try {
      const run = await sendThroughOutage(exchange, 'db-outage', {
        outage: async () => {
          // Only this test's database goes away; the server and everyone else's databases stay up.
          restore = await refuseConnections(exchange.config.databaseUrl!);
          deliveredAtOutage = sink.messages.length;
        },
        recover: async () => {
          await restore!();
        },
      });
      const deliveredBeforeOutage = new Set(sink.messages.slice(0, deliveredAtOutage).map((m) => m.messageId));
      const waiting = [...run.queuedBeforeOutage].filter((id) => !deliveredBeforeOutage.has(id));
      // Delivery is at-least-once: a delivery the relay had taken when the database went away could not be
      // recorded, so it is made again once its lease runs out. Only those in flight can come twice.
      const extraCopies = await assertPromisesKept(
        t,
        exchange,
        sink,
        run,
        /^451 4\.3\.0 Message database is unavailable; try again later$/,
      );
      // The intake cannot tell whether a write cut off by the outage committed, so it left those payloads;
      // the orphan sweep (once per DELIVERY_LEASE) is what emptied the bucket, one deletion per payload left.
      const logged = (msg: string) => exchange.logs.filter((line) => String(line.msg).startsWith(msg));
      const left = () => logged('envelope write failed with its outcome unknown').length;
      const swept = () =>
        logged('deleted payloads without an envelope').reduce((sum, line) => sum + Number(line.deleted), 0);
      assert.ok(left() > 0, 'refused messages left their payloads to the sweep');
      await eventually(
        'the sweep deleted every payload left',
        async () => [swept(), left()],
        ([a, b]) => a === b,
        30_000,
      );
      assert.ok(
        extraCopies <= DELIVERY_CONCURRENCY,
        `at most the ${DELIVERY_CONCURRENCY} deliveries in flight at the outage arrive twice; got ${extraCopies}`,
      );

      // Delivery came back by itself: the backlog waiting at the outage went out after the recovery.
      assert.ok(waiting.length > 0, 'a backlog was waiting for delivery when the database went away');
      const lateArrivals = new Set(sink.messages.filter((m) => m.receivedAt >= run.restoredAt).map((m) => m.messageId));
      const resumed = waiting.filter((id) => lateArrivals.has(id)).length;
      assert.ok(resumed > 0, 'messages accepted before the outage were delivered after it');
      t.diagnostic(
        `${waiting.length} messages waited for delivery at the outage; ${resumed} delivered after the recovery`,
      );
    } finally {
      await restore?.();
    }
  });
});
