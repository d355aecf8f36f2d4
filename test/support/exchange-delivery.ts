import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { migrateSchema, openDatabase, type Database } from '../../src/kernel/db/index.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import type { ObjectStore } from '../../src/kernel/objects/index.ts';
import type { EnvelopeFinisher } from '../../src/exchange/delivery/retention.ts';
import { startDelivery, type DeliveryOptions, type DeliveryWorkers } from '../../src/exchange/delivery/worker.ts';
import { payloadKey } from '../../src/exchange/handoff.ts';
import { MessageIntake } from '../../src/exchange/inbound/accept.ts';
import { migrations } from '../../src/exchange/migrations/index.ts';
import { RuleStore } from '../../src/exchange/rules/store.ts';
import type { EnvelopeStatus, ExchangeTables } from '../../src/exchange/tables.ts';
import { createTestDatabase } from './postgres.ts';
import type { ServiceUnderTest } from './services.ts';

/** Helpers for tests of the exchange engine's delivery side. */

export const exchangeDb = (service: ServiceUnderTest) =>
  service.database.db.withSchema('exchange') as Kysely<ExchangeTables>;

export interface ExchangeTestDatabase {
  url: string;
  /** The database's handle (statements that name the schema themselves). */
  database: Database;
  /** The exchange schema's handle. */
  db: Kysely<ExchangeTables>;
  /** Closes the handle and drops the database. */
  close(): Promise<void>;
}

/** A database of its own with the exchange schema migrated, for tests of the queue and the intake. */
export async function openExchangeTestDatabase(prefix: string, poolSize: number): Promise<ExchangeTestDatabase> {
  const created = await createTestDatabase(prefix);
  const database = await openDatabase({ url: created.url, poolSize });
  await migrateSchema(database.db, { schema: 'exchange', migrations });
  return {
    url: created.url,
    database,
    db: database.db.withSchema('exchange') as Kysely<ExchangeTables>,
    async close() {
      await database.close();
      await created.drop();
    },
  };
}

/**
 * Delivery workers as a test of the claim loop starts them: no retention sweep to run (the finisher is only
 * asked to sweep) and no log unless the test gives its own logger.
 */
export function startTestDelivery(
  options: Omit<DeliveryOptions, 'finisher' | 'logger'> & Partial<Pick<DeliveryOptions, 'logger'>>,
): DeliveryWorkers {
  return startDelivery({
    finisher: { sweep: async () => {} } as unknown as EnvelopeFinisher,
    logger: createLogger({ level: 'silent' }),
    ...options,
  });
}

/** `count` envelopes routed to smtp, due now, `accepted` as the queue's tests start from (or `status`); their ids. */
export async function enqueueEnvelopes(
  db: Kysely<ExchangeTables>,
  count: number,
  status: EnvelopeStatus = 'accepted',
): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  await db
    .insertInto('envelopes')
    .values(
      ids.map((id) => ({
        id,
        channel: 'smtp' as const,
        sender: 'a@sender.example',
        recipients: ['b@rcpt.example'],
        size: 10,
        payload_key: `exchange/payloads/${id}`,
        rule_id: null,
        outbound: ['smtp' as const],
        status,
        lease_until: null,
        last_error: null,
      })),
    )
    .execute();
  return ids;
}

/**
 * A large queue for the tests of query plans, in one statement: `waiting` envelopes due a minute ago and
 * `expired` ones whose worker's lease ran out a minute ago (payload keys `key-N`), then ANALYZE, as
 * autovacuum would have run by then. `db` is the database's handle (the statement names the schema).
 */
export async function fillQueue(db: Kysely<unknown>, counts: { waiting: number; expired?: number }): Promise<void> {
  const expired = counts.expired ?? 0;
  await sql`insert into exchange.envelopes (id, channel, sender, recipients, size, payload_key, outbound, status,
      next_attempt_at, lease_until, attempts)
    select gen_random_uuid(), 'smtp', 'a@example.com', '{b@example.com}', 10, 'key-' || n, '{smtp}',
      case when n <= ${expired} then 'delivering' else 'accepted' end, now() - interval '1 minute',
      case when n <= ${expired} then now() - interval '1 minute' end, case when n <= ${expired} then 1 else 0 end
    from generate_series(1, ${expired + counts.waiting}) as n`.execute(db);
  await sql`analyze exchange.envelopes`.execute(db);
}

export const envelopeCount = async (db: Kysely<ExchangeTables>) =>
  Number(
    (
      await db
        .selectFrom('envelopes')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

/** The keys of every stored payload. */
export async function payloadKeys(objects: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of objects.list('exchange/payloads/')) keys.push(object.key);
  return keys;
}

export const payloadCount = async (objects: ObjectStore) => (await payloadKeys(objects)).length;

export async function readObject(objects: ObjectStore, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await objects.get(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A MessageIntake on the service's database and object store: envelopes as SMTP or JSON would create them. */
export function intakeFor(service: ServiceUnderTest) {
  return intakeOn(exchangeDb(service), service.objects);
}

export function intakeOn(db: Kysely<ExchangeTables>, objects: ObjectStore) {
  return new MessageIntake({
    db,
    objects,
    rules: new RuleStore(db),
    logger: createLogger({ level: 'silent' }),
  });
}

export interface StatusEntry {
  status: string;
  detail: string | null;
  at: string;
}

export async function statusHistory(
  service: ServiceUnderTest,
  id: string,
  token = service.serviceToken,
): Promise<StatusEntry[]> {
  const response = await fetch(`${service.url}/v1/messages/${id}/status`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (response.status === 404) return [];
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { statuses: StatusEntry[] }).statuses;
}

/** Polls until the check passes (bounded; fails the test with `what` otherwise). */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (check(value)) return value;
    if (Date.now() > deadline)
      assert.fail(`${what}: not reached within ${timeoutMs} ms; last seen ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Waits until the message's history ends in a final state, and the envelope row is gone. */
export async function settled(
  service: ServiceUnderTest,
  id: string,
  final: 'delivered' | 'failed',
): Promise<StatusEntry[]> {
  // A message delivered to every recipient loses its row first and its payload right after; any other
  // keeps its row until its payload is gone: both gone is the end of either.
  await eventually(
    `envelope ${id} finished and removed, with its payload`,
    async () =>
      (await exchangeDb(service).selectFrom('envelopes').select('id').where('id', '=', id).executeTakeFirst()) ===
        undefined && (await service.objects.head(payloadKey(id))) === undefined,
    (gone) => gone,
  );
  const history = await statusHistory(service, id);
  assert.ok(
    history.some((s) => s.status === final),
    `${id} reached ${final}: ${JSON.stringify(history)}`,
  );
  return history;
}

/** A metric's value from /metrics (0 when the series does not exist yet). */
export async function metric(
  service: ServiceUnderTest,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${service.metricsUrl}/metrics`)).text();
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return 0;
}

/** A small RFC 5322 message with CRLF line ends; `extra` lines go into the body. */
export function sampleMessage(options: {
  from: string;
  to: string;
  subject: string;
  messageId: string;
  body?: string[];
}): Buffer {
  return Buffer.from(
    [
      `From: ${options.from}`,
      `To: ${options.to}`,
      `Subject: ${options.subject}`,
      `Message-ID: ${options.messageId}`,
      // A Date of its own: the relay would add one to a message without (relay-message.ts).
      'Date: Tue, 24 Nov 2026 10:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      ...(options.body ?? ['Hello.']),
      '',
    ].join('\r\n'),
  );
}
