import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/kernel/db/index.ts';
import type { ExchangeTables } from '../../src/exchange/tables.ts';
import { envelopeCount, eventually, payloadKeys } from '../support/exchange-delivery.ts';
import { startDelayingProxy } from '../support/delaying-proxy.ts';
import { startSealpostProcess, type SealpostProcess } from '../support/sealpost-process.ts';
import {
  assertAcknowledgedArrived,
  createRelayRule,
  exchangeEnv,
  rowsWithoutPayload,
  useExchangeStage,
} from './exchange-stage.ts';
import { arrivals, numberedMessage, sendOverSmtp, tally, type SentMessage } from './smtp-senders.ts';

/** Many clients at once, so that many intakes have their payload on its way to S3 when the process dies. */
const CONNECTIONS = 16;
/**
 * What the store's network adds to each request, one way: long beside a row's statement, however slow the
 * database, so that each kill finds the puts of the intakes in flight not ended (with 40 ms, a clean-clone
 * CI run of an earlier form of this test caught none).
 */
const STORE_DELAY_MS = 200;
/** Kills, each after this many 250s of its own process; a restart in between takes the mail on. */
const KILL_AFTER_QUEUED = [150, 300, 200];
/** The senders of one process send at most this many; a process that is not killed ends its round. */
const MESSAGES_PER_ROUND = 600;
const DELIVERY_CONCURRENCY = 8;

describe('kill -9 of the exchange engine while its payloads are on their way to a slow store', {
  timeout: 240_000,
}, () => {
  const stage = useExchangeStage('faults-kill-intake');

  it('loses no acknowledged message, and no row ever names a payload whose put did not end', async (t) => {
    const { sink, database } = stage;
    const { env: stageEnv, objects } = await exchangeEnv(stage, 'faults-intake', DELIVERY_CONCURRENCY);
    // The store behind a slower network than the database: its puts end well after the rows are written,
    // so that the kills catch rows whose put has not ended (the test S3 server would otherwise finish the
    // puts a dead process had sent whole). test/faults/kill-during-ingest.test.ts kills the default without.
    const s3 = new URL(stageEnv.S3_ENDPOINT!);
    const slowStore = await startDelayingProxy({ host: s3.hostname, port: Number(s3.port) }, STORE_DELAY_MS);
    const env = { ...stageEnv, S3_ENDPOINT: slowStore.url };
    const processes: SealpostProcess[] = [];
    let check: Database | undefined;
    try {
      check = await openDatabase({ url: database.url, poolSize: 2 });
      const db = check.db.withSchema('exchange') as Kysely<ExchangeTables>;
      const sent: SentMessage[] = [];
      /** Rows a kill left naming a payload that is not in the store: none may exist. */
      const withoutPayload: string[] = [];
      /** Payloads a kill left without their row (put ended, row not yet written): the orphan sweep's. */
      let orphansAtKill = 0;
      let index = 0;
      for (const [round, killAfter] of KILL_AFTER_QUEUED.entries()) {
        const engine = await startSealpostProcess(env, { which: 'exchange' });
        processes.push(engine);
        if (round === 0) {
          await createRelayRule(engine.urls.exchange);
        }
        let queued = 0;
        let kill: Promise<unknown> | undefined;
        const batch = Array.from({ length: MESSAGES_PER_ROUND }, () => numberedMessage('overlap', index++));
        sent.push(
          ...(await sendOverSmtp({
            port: engine.ports.smtp,
            connections: CONNECTIONS,
            messages: batch,
            onReply: (message) => {
              if (message.outcome === 'queued' && ++queued === killAfter) kill = engine.stop('SIGKILL');
            },
          })),
        );
        await kill;
        assert.ok(kill, `round ${round}: the kill happened`);
        // Counted while no process runs, once the store has finished what it still had under way.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const stored = new Set(await payloadKeys(objects));
        withoutPayload.push(...(await rowsWithoutPayload(db, stored)));
        const rows = new Set(
          (await db.selectFrom('envelopes').select('payload_key').execute()).map((r) => r.payload_key),
        );
        orphansAtKill += [...stored].filter((key) => !rows.has(key)).length;
      }

      assert.deepEqual(withoutPayload, [], 'no row names a payload whose put the kill cut short');
      const counts = tally(sent);
      assert.ok(counts.unanswered > 0, 'the kills caught intakes in flight');
      assert.equal(counts.refused, 0, `no message was refused: ${sent.find((m) => m.outcome === 'refused')?.reply}`);
      // The store at its own speed again, for the deliveries that follow.
      const restarted = await startSealpostProcess(
        { ...env, S3_ENDPOINT: stageEnv.S3_ENDPOINT! },
        { which: 'exchange' },
      );
      processes.push(restarted);
      await eventually(
        'every envelope delivered',
        () => envelopeCount(db),
        (n) => n === 0,
        90_000,
      );
      await eventually(
        'no payload left in the bucket',
        () => payloadKeys(objects),
        (keys) => keys.length === 0,
        30_000,
      );

      // 0 acknowledged messages lost; no bounce: the sink got nothing but the messages sent, and no
      // envelope failed or bounced.
      const byMessageId = arrivals(sink.messages);
      assertAcknowledgedArrived(sent, byMessageId);
      const failed = await db
        .selectFrom('message_status')
        .select(['envelope_id', 'status'])
        .where('status', 'in', ['failed', 'bounced', 'retrying'])
        .execute();
      assert.deepEqual(failed, [], 'no envelope failed, bounced or even retried');

      // Messages the client sent no 250 for are delivered only if their row was committed before the kill
      // (the 250 then died with the connection: the window every MTA has between its commit and its reply);
      // at most one per connection and kill.
      const unansweredDelivered = sent.filter((m) => m.outcome === 'unanswered' && byMessageId.has(m.messageId)).length;
      assert.ok(
        unansweredDelivered <= CONNECTIONS * KILL_AFTER_QUEUED.length,
        `${unansweredDelivered} unanswered messages delivered`,
      );
      assert.equal(
        sent.filter((m) => m.outcome === 'unsent' && byMessageId.has(m.messageId)).length,
        0,
        'nothing unsent was delivered',
      );
      // At-least-once delivery: only deliveries in flight at a kill may arrive twice.
      const extraCopies = [...byMessageId.values()].reduce((sum, n) => sum + n - 1, 0);
      assert.ok(extraCopies <= DELIVERY_CONCURRENCY * KILL_AFTER_QUEUED.length, `${extraCopies} duplicates`);

      t.diagnostic(
        `${KILL_AFTER_QUEUED.length} kills: sent ${JSON.stringify(counts)}; ` +
          `payloads without a row at the kills ${orphansAtKill}, all removed; ` +
          `sink ${sink.messages.length} messages, ${byMessageId.size} distinct; duplicates ${extraCopies}; ` +
          `delivered without a 250 ${unansweredDelivered}`,
      );
    } finally {
      for (const engine of processes) await engine.stop('SIGKILL').catch(() => undefined);
      await check?.close();
      await objects.close();
      await slowStore.close();
    }
  });
});
