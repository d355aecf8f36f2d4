import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { migrateSchema, openDatabase, type Database } from '../../kernel/db/index.ts';
import { createS3ObjectStore, type S3ObjectStore } from '../../kernel/objects/s3.ts';
import { migrations } from '../migrations/index.ts';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import type { ExchangeTables } from '../tables.ts';
import {
  envelopeCount,
  eventually,
  exchangeDb,
  intakeFor,
  intakeOn,
  metric,
  payloadCount,
  sampleMessage,
  statusHistory,
} from '../../../test/support/exchange-delivery.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { startS3Server, uniqueBucket, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startSealpostProcess } from '../../../test/support/sealpost-process.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { startSmtpSink } from '../../../test/support/smtp-sink.ts';

/** Accepts `count` small messages, `parallel` at a time; returns their Message-IDs. */
async function acceptMany(
  intake: ReturnType<typeof intakeOn>,
  count: number,
  tag: string,
  parallel = 32,
): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `<${tag}-${i}@sender.example>`);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < ids.length) {
        const messageId = ids[next++]!;
        const payload = sampleMessage({
          from: 'alice@sender.example',
          to: 'bob@rcpt.example',
          subject: tag,
          messageId,
        });
        await intake.accept({
          channel: 'smtp',
          sender: 'alice@sender.example',
          recipients: ['bob@rcpt.example'],
          payload,
        });
      }
    }),
  );
  return ids;
}

describe('several engine instances on one database', () => {
  let s3: S3TestServer;
  before(async () => {
    s3 = await startS3Server();
  });
  after(() => s3?.stop());

  it('two instances deliver 1,000 messages with none delivered twice and none left behind', async () => {
    const database = await createTestDatabase('exchange_pair');
    const sink = await startSmtpSink();
    const env = {
      OUTBOUND_SMTP_URL: sink.url,
      DELIVERY_CONCURRENCY: '16',
      DELIVERY_POLL_INTERVAL: '20ms',
      LOG_LEVEL: 'warn',
    };
    let first: ServiceUnderTest | undefined;
    let second: ServiceUnderTest | undefined;
    try {
      first = await startServiceForTest(exchangeService, { s3, databaseUrl: database.url, env });
      // The same bucket: either instance must be able to read what the other accepted.
      second = await startServiceForTest(exchangeService, {
        s3,
        databaseUrl: database.url,
        env: { ...env, S3_BUCKET: first.config.s3.bucket! },
      });
      await new RuleStore(exchangeDb(first)).create({
        name: 'relay',
        priority: 1,
        configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
      });

      const ids = await acceptMany(intakeFor(first), 1000, 'pair');
      // A delivered envelope's row goes with its `delivered` mark, its payload right after.
      await eventually(
        'every envelope delivered and removed, with its payload',
        async () => (await envelopeCount(exchangeDb(first!))) + (await payloadCount(first!.objects)),
        (n) => n === 0,
        60_000,
      );

      const received = sink.messages.map((m) => m.messageId);
      assert.equal(new Set(received).size, 1000, 'every message arrived');
      assert.equal(received.length, 1000, 'no message arrived twice');
      assert.deepEqual(new Set(received), new Set(ids));

      const byFirst = await metric(first, 'delivered_messages_total', { strategy: 'smtp' });
      const bySecond = await metric(second, 'delivered_messages_total', { strategy: 'smtp' });
      assert.equal(byFirst + bySecond, 1000);
      assert.ok(byFirst > 0 && bySecond > 0, `both instances delivered (${byFirst} + ${bySecond})`);
    } finally {
      await second?.stop();
      await first?.stop();
      await sink.close();
      await database.drop();
    }
  });

  it('loses nothing when an engine process is killed mid-delivery (SIGKILL)', async () => {
    const database = await createTestDatabase('exchange_kill');
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-kill-'));
    const sink = await startSmtpSink();
    const bucket = uniqueBucket('exchange-kill');
    const s3Env = {
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_REGION: s3.region,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
    };
    // A lease short enough for the test: the dead process's envelopes are free again 2 s after their last renewal.
    const deliveryEnv = { OUTBOUND_SMTP_URL: sink.url, DELIVERY_LEASE: '2s', DELIVERY_POLL_INTERVAL: '50ms' };
    let setup: Database | undefined;
    let objects: S3ObjectStore | undefined;
    let survivor: ServiceUnderTest | undefined;
    let child: Awaited<ReturnType<typeof startSealpostProcess>> | undefined;
    try {
      setup = await openDatabase({ url: database.url, poolSize: 4 });
      await migrateSchema(setup.db, { schema: 'exchange', migrations });
      const db = setup.db.withSchema('exchange') as Kysely<ExchangeTables>;
      objects = createS3ObjectStore({
        endpoint: s3.endpoint,
        bucket,
        region: s3.region,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
        forcePathStyle: true,
      });
      await objects.ensureBucket();
      await new RuleStore(db).create({
        name: 'relay',
        priority: 1,
        configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
      });
      const intake = intakeOn(db, objects);
      const ids = await acceptMany(intake, 40, 'kill', 8);

      // The sink reads each message and then keeps the sender waiting for its answer: deliveries in flight.
      sink.hold();
      child = await startSealpostProcess(
        {
          NODE_ENV: 'test',
          LOG_LEVEL: 'warn',
          DATABASE_URL: database.url,
          SEALPOST_DATA_DIR: dataDir,
          ADMIN_TOKEN: 'test-admin-token',
          SERVICE_TOKEN: 'test-service-token',
          DELIVERY_CONCURRENCY: '4',
          ...s3Env,
          ...deliveryEnv,
        },
        { which: 'exchange' },
      );
      await sink.waitUntil(() => sink.held === 4, 30_000, 'four deliveries held in flight');
      const inFlight = sink.held;
      await child.stop('SIGKILL');
      // Let the sink see the dead connections before it answers anything: a "250" nobody read is no delivery.
      await sink.waitUntil(() => sink.held === 0, 10_000, 'the killed process’s connections closed');
      sink.release();
      assert.equal(sink.messages.length, 0, 'nothing was delivered before the kill');

      survivor = await startServiceForTest(exchangeService, {
        s3,
        databaseUrl: database.url,
        env: { ...s3Env, ...deliveryEnv },
      });
      await eventually(
        'every envelope delivered and removed, with its payload',
        async () => (await envelopeCount(db)) + (await payloadCount(objects!)),
        (n) => n === 0,
        30_000,
      );

      // Delivery is at-least-once: a message whose DATA the relay had taken when the worker died may be
      // sent again by the next worker, since nobody recorded that it went out. Only those in flight at
      // the kill can come twice; here the relay never answered them, so none should.
      const received = sink.messages.map((m) => m.messageId);
      assert.deepEqual(new Set(received), new Set(ids), 'every message delivered');
      const duplicates = received.length - new Set(received).size;
      assert.ok(duplicates <= inFlight, `duplicates (${duplicates}) only among the ${inFlight} in flight`);

      // The envelopes the dead process held show the takeover in their history.
      const envelopesTakenOver = await db
        .selectFrom('message_status')
        .select('envelope_id')
        .where('detail', 'like', '%after the lease of the previous worker ran out')
        .execute();
      assert.equal(envelopesTakenOver.length, inFlight);
      const history = await statusHistory(survivor, envelopesTakenOver[0]!.envelope_id);
      assert.deepEqual(
        history.map((s) => s.status),
        ['accepted', 'routed', 'delivering', 'delivering', 'delivered'],
      );
    } finally {
      await child?.stop('SIGKILL');
      await survivor?.stop();
      await objects?.close();
      await setup?.close();
      await sink.close();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
