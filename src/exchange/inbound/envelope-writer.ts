import { sql, type CompiledQuery, type Kysely } from 'kysely';
import { Batcher, isDataError } from '../../kernel/batcher.ts';
import { compileOnce } from '../../kernel/db/compile-once.ts';
import { firstMatchingRule } from '../rules/match.ts';
import type { Channel, ExchangeTables } from '../tables.ts';
import { BOUNCE_STRATEGY, type OutboundStrategyName } from '../outbound/strategy-names.ts';

/** A message being taken in: its envelope row, written once its payload is durable. */
export interface NewEnvelope {
  id: string;
  channel: Channel;
  sender: string;
  /** senderKey(sender): what rules compare. */
  senderKey: string;
  recipients: string[];
  payloadKey: string;
  /** A bounce of ours: no rule, routed to smtp. */
  isBounce: boolean;
  body8bitmime: boolean;
  smtputf8: boolean;
  /** A line over 998 octets (RFC 5322 §2.1.1): the relay re-encodes the parts that have one. */
  longLines: boolean;
  /** The stored payload's size. */
  size: number;
  /** What the `accepted` status row says. */
  acceptedDetail: string;
}

/** The envelope as written, with what its `routed` status row says; undefined when no rule matched it. */
export type WrittenEnvelope = { outbound: OutboundStrategyName[]; routedDetail: string } | undefined;

/**
 * How the intake's statements batch: up to 200 messages a statement, two statements of each kind in flight
 * (bench/RESULTS.md: four in flight changed nothing); a row PostgreSQL refuses is tried again on its own.
 */
export const INTAKE_BATCHES = { maxBatch: 200, maxConcurrent: 2, retryAlone: isDataError };

/** The columns of the statement's input rows (jsonb_to_recordset needs them spelled out). */
const INCOMING_COLUMNS = sql`incoming(id uuid, channel text, sender text, sender_key text, recipients text[],
  payload_key text, is_bounce boolean, body_8bitmime boolean, smtputf8 boolean, long_lines boolean, size bigint,
  accepted_detail text)`;

/**
 * The select list of an envelope's first status rows, `accepted` then `routed`: unnest emits them in array
 * order, so their ids (the history's order within one timestamp) follow that order.
 */
function firstStatusRows(id: string, acceptedDetail: string, routedDetail: string) {
  return [
    sql.ref<string>(id).as('envelope_id'),
    sql<string>`unnest(array['accepted', 'routed'])`.as('status'),
    sql<string>`unnest(array[${sql.ref(acceptedDetail)}, ${sql.ref(routedDetail)}])`.as('detail'),
  ];
}

/**
 * Writes envelope rows for MessageIntake, several concurrent messages per statement (see Batcher): one
 * statement matches each message to its delivery rule (firstMatchingRule, as RuleStore.match chooses it)
 * and inserts its envelope `accepted` with its `accepted` and `routed` status rows, so a message costs a
 * fraction of one round trip and one commit. Its payload is durable already (docs/design.md#durability-of-intake).
 */
export function createEnvelopeWriter(db: Kysely<ExchangeTables>): (envelope: NewEnvelope) => Promise<WrittenEnvelope> {
  const statement = compileOnce((rows: string) => insertStatement(db, rows), '["compile-once placeholder"]', {
    prepare: true,
  });
  const batcher = new Batcher<NewEnvelope, WrittenEnvelope>(
    (batch) => insertEnvelopes(db, statement, batch),
    INTAKE_BATCHES,
  );
  return (envelope) => batcher.submit(envelope);
}

/** What the envelope statement returns for each row it wrote. */
interface WrittenRow {
  id: string;
  outbound: OutboundStrategyName[];
  routed_detail: string;
}

async function insertEnvelopes(
  db: Kysely<ExchangeTables>,
  statement: (rows: string) => CompiledQuery<WrittenRow>,
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
      payload_key: e.payloadKey,
      is_bounce: e.isBounce,
      body_8bitmime: e.body8bitmime,
      smtputf8: e.smtputf8,
      long_lines: e.longLines,
      size: e.size,
      accepted_detail: e.acceptedDetail,
    })),
  );
  const written = (await db.executeQuery(statement(rows))).rows;
  const byId = new Map(written.map((row) => [row.id, row]));
  return batch.map((e) => {
    const row = byId.get(e.id);
    if (!row) return undefined;
    return { outbound: row.outbound, routedDetail: row.routed_detail };
  });
}

/** Matches each incoming message to its rule and writes its envelope `accepted`, with its first two status rows. */
function insertStatement(db: Kysely<ExchangeTables>, rows: string) {
  const incoming = sql<{
    id: string;
    channel: Channel;
    sender: string;
    sender_key: string;
    recipients: string[];
    payload_key: string;
    is_bounce: boolean;
    body_8bitmime: boolean;
    smtputf8: boolean;
    long_lines: boolean;
    size: number;
    accepted_detail: string;
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
          'incoming.payload_key',
          'incoming.is_bounce',
          'incoming.body_8bitmime',
          'incoming.smtputf8',
          'incoming.long_lines',
          'incoming.size',
          'incoming.accepted_detail',
          'rule.id as rule_id',
          sql<
            OutboundStrategyName[]
          >`case when incoming.is_bounce then array[${sql.lit(BOUNCE_STRATEGY)}]::text[] else rule.outbound end`.as(
            'outbound',
          ),
          sql<string>`case when incoming.is_bounce
            then 'to ' || ${sql.lit(BOUNCE_STRATEGY)} || ', without a rule (a bounce)'
            else 'by rule "' || rule.name || '" to ' || array_to_string(rule.outbound, ', ') end`.as('routed_detail'),
        ]),
    )
    .with('envelope', (qc) =>
      qc
        .insertInto('envelopes')
        .columns([
          'id',
          'channel',
          'sender',
          'recipients',
          'size',
          'payload_key',
          'rule_id',
          'outbound',
          'status',
          'next_attempt_at',
          'is_bounce',
          'body_8bitmime',
          'smtputf8',
          'long_lines',
        ])
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
              sql<Date>`now()`.as('next_attempt_at'),
              'routed.is_bounce',
              'routed.body_8bitmime',
              'routed.smtputf8',
              'routed.long_lines',
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
            .select(firstStatusRows('envelope.id', 'routed.accepted_detail', 'routed.routed_detail')),
        )
        .returning('message_status.id'),
    )
    .selectFrom('envelope')
    .innerJoin('routed', 'routed.id', 'envelope.id')
    .select(['envelope.id', 'envelope.outbound', 'routed.routed_detail']);
}
