import { sql, type CompiledQuery, type Kysely } from 'kysely';
import { Batcher, isDataError } from '../../kernel/batcher.ts';
import { compileOnce } from '../../kernel/db/compile-once.ts';
import { firstMatchingRule } from '../rules/match.ts';
import type { Channel, ExchangeTables } from '../tables.ts';
import { BOUNCE_STRATEGY, type OutboundStrategyName } from '../outbound/registry.ts';

/** An accepted message whose payload is stored, ready for its envelope row. */
export interface NewEnvelope {
  id: string;
  channel: Channel;
  sender: string;
  /** senderKey(sender): what rules compare. */
  senderKey: string;
  recipients: string[];
  size: number;
  payloadKey: string;
  /** A bounce of ours: no rule, routed to smtp. */
  isBounce: boolean;
  body8bitmime: boolean;
  smtputf8: boolean;
}

/** The envelope as written, or undefined when no rule matched it (nothing was written then). */
export type WrittenEnvelope = { outbound: OutboundStrategyName[] } | undefined;

/** The columns of the statement's input rows (jsonb_to_recordset needs them spelled out). */
const INCOMING_COLUMNS = sql`incoming(id uuid, channel text, sender text, sender_key text, recipients text[], size bigint, payload_key text, is_bounce boolean, body_8bitmime boolean, smtputf8 boolean)`;

/**
 * Writes envelope rows for MessageIntake, several concurrent messages per statement (see Batcher):
 * one statement matches each message to its delivery rule, inserts the envelope (status `accepted`) and
 * its first status rows, `accepted` and `routed` (the rule and strategies in its detail), so a message
 * costs a fraction of one round trip and one commit instead of two round trips (rule lookup, insert)
 * of its own. The rule is chosen by firstMatchingRule, as RuleStore.match chooses it. Atomic per
 * statement like a transaction: a message's row and its status rows exist together or not at all.
 */
export function createEnvelopeWriter(db: Kysely<ExchangeTables>): (envelope: NewEnvelope) => Promise<WrittenEnvelope> {
  const statement = compileOnce((rows: string) => insertStatement(db, rows), '["compile-once placeholder"]');
  const batcher = new Batcher<NewEnvelope, WrittenEnvelope>((batch) => insertEnvelopes(db, statement, batch), {
    maxBatch: 200,
    maxConcurrent: 2,
    retryAlone: isDataError,
  });
  return (envelope) => batcher.submit(envelope);
}

async function insertEnvelopes(
  db: Kysely<ExchangeTables>,
  statement: (rows: string) => CompiledQuery<{ id: string; outbound: OutboundStrategyName[] }>,
  batch: NewEnvelope[],
): Promise<WrittenEnvelope[]> {
  // One jsonb parameter rather than eight per message: the statement's text is the same for any batch,
  // so it is compiled once (compileOnce).
  const rows = JSON.stringify(
    batch.map((e) => ({
      id: e.id,
      channel: e.channel,
      sender: e.sender,
      sender_key: e.senderKey,
      recipients: e.recipients,
      size: e.size,
      payload_key: e.payloadKey,
      is_bounce: e.isBounce,
      body_8bitmime: e.body8bitmime,
      smtputf8: e.smtputf8,
    })),
  );
  const written = (await db.executeQuery(statement(rows))).rows;
  const byId = new Map(written.map((row) => [row.id, row.outbound]));
  return batch.map((e) => {
    const outbound = byId.get(e.id);
    return outbound ? { outbound } : undefined;
  });
}

/** Matches each incoming message to its rule and writes its envelope and its `accepted` and `routed` status rows. */
function insertStatement(db: Kysely<ExchangeTables>, rows: string) {
  const incoming = sql<{
    id: string;
    channel: Channel;
    sender: string;
    sender_key: string;
    recipients: string[];
    size: number;
    payload_key: string;
    is_bounce: boolean;
    body_8bitmime: boolean;
    smtputf8: boolean;
  }>`jsonb_to_recordset(${rows}::jsonb)`.as<'incoming'>(INCOMING_COLUMNS);

  return db
    .with('routed', (qc) =>
      qc
        .selectFrom(incoming)
        .leftJoinLateral(
          (eb) => {
            const rules = eb.selectFrom('rules').select(['rules.id', 'rules.name', 'rules.outbound']);
            return firstMatchingRule(rules, eb.ref('incoming.channel'), eb.ref('incoming.sender_key')).as('rule');
          },
          // Bounces take BOUNCE_STRATEGY without a rule.
          (join) => join.on('incoming.is_bounce', '=', false),
        )
        .where((w) => w.or([w('incoming.is_bounce', '=', true), w('rule.id', 'is not', null)]))
        .select([
          'incoming.id',
          'incoming.channel',
          'incoming.sender',
          'incoming.recipients',
          'incoming.size',
          'incoming.payload_key',
          'incoming.is_bounce',
          'incoming.body_8bitmime',
          'incoming.smtputf8',
          'rule.id as rule_id',
          sql<OutboundStrategyName[]>`case when incoming.is_bounce then array[${sql.lit(BOUNCE_STRATEGY)}]::text[] else rule.outbound end`.as('outbound'),
          sql<string>`incoming.size || ' bytes over ' || incoming.channel
            || case when incoming.is_bounce then ', a bounce of ours' else '' end`.as('accepted_detail'),
          sql<string>`case when incoming.is_bounce then 'to ' || ${sql.lit(BOUNCE_STRATEGY)} || ', without a rule (a bounce)'
            else 'by rule "' || rule.name || '" to ' || array_to_string(rule.outbound, ', ') end`.as('routed_detail'),
        ]),
    )
    .with('envelope', (qc) =>
      qc
        .insertInto('envelopes')
        .columns(['id', 'channel', 'sender', 'recipients', 'size', 'payload_key', 'rule_id', 'outbound', 'status', 'is_bounce', 'body_8bitmime', 'smtputf8'])
        .expression((eb) =>
          eb
            .selectFrom('routed')
            .select([
              'routed.id',
              'routed.channel',
              'routed.sender',
              'routed.recipients',
              'routed.size',
              'routed.payload_key',
              'routed.rule_id',
              'routed.outbound',
              sql.lit('accepted').as('status'),
              'routed.is_bounce',
              'routed.body_8bitmime',
              'routed.smtputf8',
            ]),
        )
        .returning(['id', 'outbound']),
    )
    .with('history', (qc) =>
      qc
        .insertInto('message_status')
        .columns(['envelope_id', 'status', 'detail'])
        .expression((eb) =>
          eb
            .selectFrom('envelope')
            .innerJoin('routed', 'routed.id', 'envelope.id')
            // Two rows per envelope, `accepted` then `routed`: unnest emits them in array order, so their
            // ids (the history's order within one timestamp) follow that order.
            .select([
              'envelope.id',
              sql<string>`unnest(array['accepted', 'routed'])`.as('status'),
              sql<string>`unnest(array[routed.accepted_detail, routed.routed_detail])`.as('detail'),
            ]),
        )
        .returning('message_status.id'),
    )
    .selectFrom('envelope')
    .select(['envelope.id', 'envelope.outbound']);
}
