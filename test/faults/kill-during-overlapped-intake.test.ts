import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/kernel/db/index.ts';
import type { ExchangeTables } from '../../src/exchange/tables.ts';
import { envelopeCount, eventually, payloadKeys } from '../support/exchange-delivery.ts';
import { startSealpostProcess, type SealpostProcess } from '../support/sealpost-process.ts';
import { exchangeEnv, useExchangeStage } from './exchange-stage.ts';
import { arrivals, numberedMessage, sendOverSmtp, tally, type SentMessage } from './smtp-senders.ts';

/**
 * Many clients at once, so that many intakes are between their row and their acknowledgement (the row
 * `storing`, the payload on its way to S3) when the process dies.
 */
const CONNECTIONS = 16;
/** Kills, each after this many 250s of its own process; a restart in between takes the mail on. */
const KILL_AFTER_QUEUED = [150, 300, 200];
/** The senders of one process send at most this many; a process that is not killed ends its round. */
const MESSAGES_PER_ROUND = 600;
const DELIVERY_CONCURRENCY = 8;
/** The `Received` header's `id` is the envelope id (received-header.ts). */
const RECEIVED_ID = /\(Sealpost\) with E?SMTPS? id ([0-9a-f-]{36})/;

describe('kill -9 of the exchange engine during overlapped intake (row written while the payload is stored)', {
  timeout: 240_000,
}, () => {
  const stage = useExchangeStage('faults-kill-overlap');

  it('loses no acknowledged message; never delivers or bounces one whose intake was not acknowledged', async (t) => {
    const { sink, database } = stage;
    const { env: stageEnv, objects } = await exchangeEnv(stage, 'faults-overlap', DELIVERY_CONCURRENCY);
    // Every message overlapped, however many are in flight (by default only a lone one is): the kills must
    // catch intakes between their row and their acknowledgement. test/faults/kill-during-ingest.test.ts
    // kills the default, where most of 8 connections' messages are stored first.
    const env = { ...stageEnv, INTAKE_OVERLAP_LIMIT: String(CONNECTIONS) };
    const processes: SealpostProcess[] = [];
    let check: Database | undefined;
    try {
      check = await openDatabase({ url: database.url, poolSize: 2 });
      const db = check.db.withSchema('exchange') as Kysely<ExchangeTables>;
      const sent: SentMessage[] = [];
      /** Envelopes whose row was still `storing` when a kill came: intakes that were never acknowledged. */
      const storingAtKill = new Set<string>();
      let index = 0;
      for (const [round, killAfter] of KILL_AFTER_QUEUED.entries()) {
        const engine = await startSealpostProcess(env, { which: 'exchange' });
        processes.push(engine);
        if (round === 0) {
          const rule = await fetch(`${engine.urls.exchange}/v1/config`, {
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
        // Counted while no process runs: rows the kill caught between insert and acknowledgement.
        const storing = await db.selectFrom('envelopes').select('id').where('status', '=', 'storing').execute();
        for (const row of storing) storingAtKill.add(row.id);
      }

      assert.ok(storingAtKill.size > 0, 'the kills caught intakes between their row and their acknowledgement');
      const counts = tally(sent);
      assert.equal(counts.refused, 0, `no message was refused: ${sent.find((m) => m.outcome === 'refused')?.reply}`);
      const restarted = await startSealpostProcess(env, { which: 'exchange' });
      processes.push(restarted);
      await eventually(
        'every envelope delivered, or removed as abandoned',
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

      // 0 acknowledged messages lost.
      const byMessageId = arrivals(sink.messages);
      const missing = sent.filter((m) => m.outcome === 'queued' && !byMessageId.has(m.messageId));
      assert.deepEqual(
        missing.map((m) => m.messageId),
        [],
        'every message answered 250 was delivered',
      );

      // No bounce: the sink got nothing but the messages sent, and no envelope failed or bounced.
      const known = new Set(sent.map((m) => m.messageId));
      assert.deepEqual(
        [...byMessageId.keys()].filter((id) => !known.has(id)),
        [],
        'the sink got nothing but the messages sent',
      );
      const failed = await db
        .selectFrom('message_status')
        .select(['envelope_id', 'status'])
        .where('status', 'in', ['failed', 'bounced', 'retrying'])
        .execute();
      assert.deepEqual(failed, [], 'no envelope failed, bounced or even retried');

      // Intakes caught before their acknowledgement: never delivered, and not a single status row (the
      // `accepted` row is written by the acknowledgement itself).
      const deliveredEnvelopes = new Set(sink.messages.map((m) => RECEIVED_ID.exec(m.raw.toString('latin1'))?.[1]));
      const deliveredUnacknowledged = [...storingAtKill].filter((id) => deliveredEnvelopes.has(id));
      assert.deepEqual(deliveredUnacknowledged, [], 'no envelope that was `storing` at a kill was delivered');
      const history =
        storingAtKill.size === 0
          ? []
          : await db
              .selectFrom('message_status')
              .select(['envelope_id', 'status'])
              .where('envelope_id', 'in', [...storingAtKill])
              .execute();
      assert.deepEqual(history, [], 'no envelope that was `storing` at a kill has any status');
      // Messages the client sent no 250 for are delivered only if their acknowledgement was committed
      // before the kill (the 250 then died with the connection: the window every MTA has between its
      // commit and its reply); at most one per connection and kill.
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
          `rows storing at the kills ${storingAtKill.size} (none delivered, none with a status); ` +
          `sink ${sink.messages.length} messages, ${byMessageId.size} distinct; duplicates ${extraCopies}; ` +
          `delivered without a 250 ${unansweredDelivered}`,
      );
    } finally {
      for (const engine of processes) await engine.stop('SIGKILL').catch(() => undefined);
      await check?.close();
      await objects.close();
    }
  });
});
