import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/kernel/db/index.ts';
import type { ExchangeTables } from '../../src/exchange/tables.ts';
import { envelopeCount, eventually, payloadKeys } from '../support/exchange-delivery.ts';
import { startSealpostProcess, type SealpostProcess } from '../support/sealpost-process.ts';
import { exchangeEnv, rowsWithoutPayload, useExchangeStage } from './exchange-stage.ts';
import { numberedMessage, sendOverSmtp, tally } from './smtp-senders.ts';

/**
 * kill-during-ingest.test.ts for messages the rules split per recipient: each message goes to a colleague
 * (rule "inside") and a customer (rule "outside": recipients outside org.example), so the intake writes two
 * envelopes and stores two payloads per message before its one 250. Both rules relay to the sink, which
 * tells the parts apart by their envelope recipient. After a kill -9 in the middle and a restart, every part
 * of each message answered 250 arrives, and of any other message all parts or none (the parts' rows are
 * written in one transaction).
 */
const MESSAGES = 600;
const CONNECTIONS = 8;
/** The kill comes after this many 250s: split messages cost two puts and a transaction each, so fewer. */
const KILL_AFTER_QUEUED = 300;
const DELIVERY_CONCURRENCY = 8;
const COLLEAGUE = 'colleague@org.example';
const CUSTOMER = 'customer@example.com';

async function createSplittingRules(exchangeUrl: string): Promise<void> {
  for (const [name, priority, params] of [
    ['outside', 1, { recipientDomains: ['!org.example'] }],
    ['inside', 2, {}],
  ] as const) {
    const rule = await fetch(`${exchangeUrl}/v1/config`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      body: JSON.stringify({
        name,
        priority,
        configuration: { params: { channel: 'smtp', ...params }, outbound: ['smtp'] },
      }),
    });
    assert.equal(rule.status, 201, await rule.text());
  }
}

describe('kill -9 of the exchange engine in the middle of an SMTP ingest of split messages', {
  timeout: 200_000,
}, () => {
  const stage = useExchangeStage('faults-kill-split');

  it('delivers every part of each message answered 250, and of the others all parts or none', async (t) => {
    const { sink, database } = stage;
    const { env, objects } = await exchangeEnv(stage, 'faults-kill-split', DELIVERY_CONCURRENCY);
    let engine: SealpostProcess | undefined;
    let restarted: SealpostProcess | undefined;
    let check: Database | undefined;
    try {
      engine = await startSealpostProcess(env, { which: 'exchange' });
      await createSplittingRules(engine.urls.exchange);

      const killed = engine;
      let queuedSoFar = 0;
      let kill: Promise<unknown> | undefined;
      const sent = await sendOverSmtp({
        port: engine.ports.smtp,
        connections: CONNECTIONS,
        to: [COLLEAGUE, CUSTOMER],
        messages: Array.from({ length: MESSAGES }, (_, i) => numberedMessage('split', i)),
        onReply: (message) => {
          if (message.outcome === 'queued' && ++queuedSoFar === KILL_AFTER_QUEUED) kill = killed.stop('SIGKILL');
        },
      });
      await kill;
      const counts = tally(sent);
      assert.ok(kill, `the kill happened (${JSON.stringify(counts)})`);
      assert.equal(
        counts.refused,
        0,
        `nothing refused before the kill: ${sent.find((m) => m.outcome === 'refused')?.reply}`,
      );

      check = await openDatabase({ url: database.url, poolSize: 2 });
      const db = check.db.withSchema('exchange') as Kysely<ExchangeTables>;
      const keysAtKill = new Set(await payloadKeys(objects));
      assert.deepEqual(await rowsWithoutPayload(db, keysAtKill), [], 'no row without its payload');
      // The rows of one message are written together: no message has one part's row without the other's.
      const split = await db
        .selectFrom('message_status')
        .select('detail')
        .where('status', '=', 'accepted')
        .where('detail', 'like', '%part 1 of 2 of message %')
        .execute();
      const parts = await db.selectFrom('message_status').select('detail').where('status', '=', 'accepted').execute();
      assert.equal(parts.length, split.length * 2, 'every written message has both its parts');

      restarted = await startSealpostProcess(env, { which: 'exchange' });
      await eventually(
        'every envelope delivered and removed',
        () => envelopeCount(db),
        (n) => n === 0,
        90_000,
      );

      const failed = await db
        .selectFrom('message_status')
        .select(['envelope_id', 'status'])
        .where('status', 'in', ['failed', 'bounced'])
        .execute();
      assert.deepEqual(failed, [], 'no envelope failed or bounced');

      // The parts that arrived, by message: each relayed copy goes to one of the two recipients only.
      const partsOf = new Map<string, Map<string, number>>();
      for (const message of sink.messages) {
        assert.equal(message.to.length, 1, `one recipient per part: ${message.to.join(', ')}`);
        const byRecipient = partsOf.get(message.messageId!) ?? new Map<string, number>();
        byRecipient.set(message.to[0]!, (byRecipient.get(message.to[0]!) ?? 0) + 1);
        partsOf.set(message.messageId!, byRecipient);
      }
      const known = new Set(sent.map((m) => m.messageId));
      assert.deepEqual(
        [...partsOf.keys()].filter((id) => !known.has(id)),
        [],
        'nothing but the messages sent',
      );
      const original = new Map(sent.map((m) => [m.messageId, m.raw]));
      for (const message of sink.messages) {
        const raw = original.get(message.messageId!)!;
        assert.ok(message.raw.subarray(-raw.length).equals(raw), `${message.messageId} arrived intact`);
      }

      const missing = sent
        .filter((m) => m.outcome === 'queued')
        .filter((m) => !partsOf.get(m.messageId)?.has(COLLEAGUE) || !partsOf.get(m.messageId)?.has(CUSTOMER));
      assert.deepEqual(
        missing.map((m) => m.messageId),
        [],
        'every part of each message answered 250 arrived',
      );
      const halves = [...partsOf.entries()].filter(([, byRecipient]) => byRecipient.size !== 2);
      assert.deepEqual(
        halves.map(([id]) => id),
        [],
        'no message arrived in part',
      );
      assert.equal(
        sent.filter((m) => m.outcome === 'unsent' && partsOf.has(m.messageId)).length,
        0,
        'nothing unsent was delivered',
      );
      const unansweredDelivered = sent.filter((m) => m.outcome === 'unanswered' && partsOf.has(m.messageId)).length;
      assert.ok(counts.unanswered <= CONNECTIONS, `${counts.unanswered} unanswered at the kill`);

      // At-least-once: only deliveries in flight at the kill may arrive twice.
      const extraCopies = [...partsOf.values()].reduce(
        (sum, byRecipient) => sum + [...byRecipient.values()].reduce((s, n) => s + n - 1, 0),
        0,
      );
      assert.ok(extraCopies <= DELIVERY_CONCURRENCY, `at most ${DELIVERY_CONCURRENCY} parts twice; got ${extraCopies}`);

      // Payloads of messages the kill cut short (the first part's, and copies without rows) are swept.
      await eventually(
        'no payload left in the bucket',
        () => payloadKeys(objects),
        (keys) => keys.length === 0,
        30_000,
      );

      t.diagnostic(
        `kill -9 after ${KILL_AFTER_QUEUED} 250s: sent ${JSON.stringify(counts)}; split messages written ` +
          `${split.length}; sink ${sink.messages.length} parts of ${partsOf.size} messages; ` +
          `duplicates ${extraCopies}; delivered without a 250 ${unansweredDelivered}`,
      );
    } finally {
      await engine?.stop('SIGKILL');
      await restarted?.stop();
      await check?.close();
      await objects.close();
    }
  });
});
