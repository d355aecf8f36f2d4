/**
 * The stage of the exchange's kill -9 tests: a real S3 server, an SMTP sink the deliveries go to, a
 * database and a data folder of their own, started before the suite's tests and removed after them;
 * and the environment of an exchange process that uses them, with a fresh bucket.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { ExchangeTables } from '../../src/exchange/tables.ts';
import type { ObjectStore } from '../../src/kernel/objects/index.ts';
import { createS3ObjectStore } from '../../src/kernel/objects/s3.ts';
import { createTestDatabase } from '../support/postgres.ts';
import { s3Env, startS3Server, uniqueBucket, type S3TestServer } from '../support/s3-server.ts';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts';
import type { SentMessage } from './smtp-senders.ts';

export interface ExchangeStage {
  s3: S3TestServer;
  sink: SmtpSink;
  database: { url: string; drop(): Promise<void> };
  dataDir: string;
}

/** Registers the suite's before and after hooks; the stage is there once `before` has run. */
export function useExchangeStage(name: string): ExchangeStage {
  const stage = {} as ExchangeStage;
  before(async () => {
    [stage.s3, stage.sink, stage.database, stage.dataDir] = await Promise.all([
      startS3Server(),
      startSmtpSink(),
      createTestDatabase(name.replaceAll('-', '_')),
      mkdtemp(join(tmpdir(), `sealpost-${name}-`)),
    ]);
  });
  after(async () => {
    await stage.sink?.close();
    await stage.s3?.stop();
    await stage.database?.drop();
    if (stage.dataDir) await rm(stage.dataDir, { recursive: true, force: true });
  });
  return stage;
}

/**
 * The environment of an exchange process on the stage, its payloads in a new bucket (`objects`, for the
 * test to look into and close): delivery to the
 * sink with `deliveryConcurrency` workers, and a dead process's envelopes (and the sweeps' grace) taken
 * again 2 s after their last lease renewal instead of 5 min.
 */
export async function exchangeEnv(
  stage: ExchangeStage,
  name: string,
  deliveryConcurrency: number,
): Promise<{ env: Record<string, string>; objects: ObjectStore }> {
  const { s3, sink, database, dataDir } = stage;
  const bucket = uniqueBucket(name);
  const objects = createS3ObjectStore({ ...s3, bucket });
  await objects.ensureBucket();
  const env = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: database.url,
    SEALPOST_DATA_DIR: dataDir,
    ADMIN_TOKEN: 'test-admin-token',
    SERVICE_TOKEN: 'test-service-token',
    ...s3Env(s3, bucket),
    OUTBOUND_SMTP_URL: sink.url,
    DELIVERY_CONCURRENCY: String(deliveryConcurrency),
    DELIVERY_LEASE: '2s',
    DELIVERY_POLL_INTERVAL: '50ms',
    DELIVERY_RETRY_BASE: '100ms',
  };
  return { env, objects };
}

/** The delivery rule the kill tests relay by: all SMTP mail to the sink. */
export async function createRelayRule(exchangeUrl: string): Promise<void> {
  const rule = await fetch(`${exchangeUrl}/v1/config`, {
    method: 'POST',
    headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    }),
  });
  assert.equal(rule.status, 201, await rule.text());
}

/** 0 acknowledged messages lost, and the sink got nothing but the messages sent (`arrived`: arrivals()). */
export function assertAcknowledgedArrived(sent: SentMessage[], arrived: Map<string, number>): void {
  const missing = sent.filter((m) => m.outcome === 'queued' && !arrived.has(m.messageId));
  assert.deepEqual(
    missing.map((m) => m.messageId),
    [],
    'every message answered 250 was delivered',
  );
  const known = new Set(sent.map((m) => m.messageId));
  assert.deepEqual(
    [...arrived.keys()].filter((id) => !known.has(id)),
    [],
    'the sink got nothing but the messages sent',
  );
}

/**
 * Rows of mail still to deliver whose payload is not among `stored` (the keys after a kill): none may exist,
 * since the intake writes a row only once its payload is durable (docs/design.md#durability-of-intake). A
 * finished row (delivered with refused recipients, or failed) may have lost its payload before its removal.
 */
export async function rowsWithoutPayload(db: Kysely<ExchangeTables>, stored: Set<string>): Promise<string[]> {
  const waiting = await db
    .selectFrom('envelopes')
    .select(['id', 'payload_key'])
    .where('status', 'in', ['accepted', 'delivering', 'retrying'])
    .execute();
  return waiting.filter((row) => !stored.has(row.payload_key)).map((row) => row.id);
}
