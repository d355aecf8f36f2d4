import { sql, type CompiledQuery, type Kysely } from 'kysely';
import { Batcher, isDataError } from '../../kernel/batcher.ts';
import { compileOnce } from '../../kernel/db/compile-once.ts';
import { firstMatchingRule } from '../rules/match.ts';
import type { Claim } from '../delivery/queue.ts';
import type { Channel, EnvelopeStatus, ExchangeTables } from '../tables.ts';
import { BOUNCE_STRATEGY, type OutboundStrategyName } from '../outbound/strategy-names.ts';

/** A message being taken in: its envelope row is written while its payload is stored, or once it is. */
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
  /** The payload is durable already (written by a `stored` writer): its size and `accepted` status detail. */
  stored?: { size: number; acceptedDetail: string };
  /**
   * With `stored`: this instance's delivery holds a slot for the message (DeliveryWorkers.reserve), so the row
   * is born claimed: `delivering`, attempt 1, leased until this, with its `delivering` status row.
   */
  bornLeaseUntil?: Date;
}

/**
 * The envelope as written, with what its `routed` status row says and, when it was born claimed, its claim;
 * or undefined when no rule matched it (nothing was written then).
 */
export type WrittenEnvelope = { outbound: OutboundStrategyName[]; routedDetail: string; claim?: Claim } | undefined;

/** A stored envelope whose payload is durable too: what its acknowledgement records. */
export interface AcknowledgedEnvelope {
  id: string;
  size: number;
  acceptedDetail: string;
  routedDetail: string;
}

/**
 * How the intake's statements batch: up to 200 messages a statement, two statements of each kind in flight
 * (bench/RESULTS.md: four in flight changed nothing); a row PostgreSQL refuses is tried again on its own.
 */
export const INTAKE_BATCHES = { maxBatch: 200, maxConcurrent: 2, retryAlone: isDataError };

/**
 * The columns of the statement's input rows (jsonb_to_recordset needs them spelled out); `size` and
 * `accepted_detail` are null unless the payload is stored already (NewEnvelope.stored).
 */
const INCOMING_COLUMNS = sql`incoming(id uuid, channel text, sender text, sender_key text, recipients text[],
  payload_key text, is_bounce boolean, body_8bitmime boolean, smtputf8 boolean, size bigint, accepted_detail text,
  lease_until timestamptz)`;

/**
 * The select list of an envelope's first status rows, `accepted` then `routed`, and `delivering` when it is
 * born claimed (`bornLeaseUntil` is not null): unnest emits them in array order, so their ids (the history's
 * order within one timestamp) follow that order. The `delivering` row reads as a claim's first one does.
 */
function firstStatusRows(id: string, acceptedDetail: string, routedDetail: string, bornLeaseUntil?: string) {
  // How many of the three rows: the same slice of both arrays, so that status and detail stay paired.
  const rows =
    bornLeaseUntil === undefined ? sql.lit(2) : sql`case when ${sql.ref(bornLeaseUntil)} is null then 2 else 3 end`;
  return [
    sql.ref<string>(id).as('envelope_id'),
    sql<string>`unnest((array['accepted', 'routed', 'delivering'])[1:${rows}])`.as('status'),
    sql<string>`unnest((array[${sql.ref(acceptedDetail)}, ${sql.ref(routedDetail)}, 'attempt 1'])[1:${rows}])`.as(
      'detail',
    ),
  ];
}

/**
 * Writes envelope rows for MessageIntake, several concurrent messages per statement (see Batcher): one
 * statement matches each message to its delivery rule and inserts its envelope, so a message costs a
 * fraction of one round trip and one commit. The rule is chosen by firstMatchingRule, as RuleStore.match
 * chooses it (docs/design.md#durability-of-intake has the two ways):
 * - by default the row is written while the payload is being stored, in status `storing`, which no worker
 *   claims and no one bounces; createEnvelopeAcknowledger makes it `accepted` once the payload is durable;
 * - `stored`: the payload is durable already (NewEnvelope.stored), and the row is written `accepted` with
 *   its `accepted` and `routed` status rows, in the same statement and commit;
 * - `beside`: as `stored`, but written while the payload is being stored (its size is known, its bytes
 *   held): the row is `payload_pending` and due only `graceMs` from now, so that no other instance claims
 *   it before its intake knows the payload durable; the intake's own instance claims it then by its id
 *   (EnvelopeQueue.claimDue's `mine`).
 */
export function createEnvelopeWriter(
  db: Kysely<ExchangeTables>,
  way: WriterWay = { stored: false },
): (envelope: NewEnvelope) => Promise<WrittenEnvelope> {
  const statement = compileOnce((rows: string) => insertStatement(db, rows, way), '["compile-once placeholder"]', {
    prepare: true,
  });
  const batcher = new Batcher<NewEnvelope, WrittenEnvelope>(
    (batch) => insertEnvelopes(db, statement, batch, way.beside !== undefined),
    INTAKE_BATCHES,
  );
  return (envelope) => batcher.submit(envelope);
}

/**
 * Acknowledges envelopes whose payload is durable, several per statement: `storing` becomes `accepted`
 * (claimable from now on) with the payload's size, and the `accepted` and `routed` status rows are
 * written, in one statement per batch. True when the row was still `storing` (the recovery rule had not
 * deleted it); only then may the sender be told 250/202.
 */
export function createEnvelopeAcknowledger(
  db: Kysely<ExchangeTables>,
): (envelope: AcknowledgedEnvelope) => Promise<boolean> {
  const statement = compileOnce((rows: string) => acknowledgeStatement(db, rows), '["compile-once placeholder"]', {
    prepare: true,
  });
  const batcher = new Batcher<AcknowledgedEnvelope, boolean>(async (batch) => {
    const rows = JSON.stringify(
      batch.map((e) => ({
        id: e.id,
        size: e.size,
        accepted_detail: e.acceptedDetail,
        routed_detail: e.routedDetail,
      })),
    );
    const done = new Set((await db.executeQuery(statement(rows))).rows.map((row) => row.id));
    return batch.map((e) => done.has(e.id));
  }, INTAKE_BATCHES);
  return (envelope) => batcher.submit(envelope);
}

/**
 * The acknowledgement's statement for a batch (rows: JSON of id, size and the two status details). It finds
 * its rows among the `storing` ones by their index (migration 0005): exported for the test of that plan.
 */
export function acknowledgeStatement(db: Kysely<ExchangeTables>, rows: string) {
  const acked = sql<{
    id: string;
    size: number;
    accepted_detail: string;
    routed_detail: string;
  }>`jsonb_to_recordset(${rows}::jsonb)`.as<'acked'>(
    sql`acked(id uuid, size bigint, accepted_detail text, routed_detail text)`,
  );
  return db
    .with('changed', (qc) =>
      qc
        .updateTable('envelopes')
        .from(acked)
        // Claimed in the order of acknowledgement, not of the start of the intake.
        .set({
          status: 'accepted',
          size: sql<number>`acked.size`,
          next_attempt_at: sql<Date>`now()`,
          updated_at: sql<Date>`now()`,
        })
        .whereRef('envelopes.id', '=', 'acked.id')
        // A literal: the prepared statement's generic plan can then use the index of `storing` rows.
        .where('envelopes.status', '=', sql.lit('storing'))
        .returning(['envelopes.id', 'acked.accepted_detail', 'acked.routed_detail']),
    )
    .with('history', (qc) =>
      qc
        .insertInto('message_status')
        .columns(['envelope_id', 'status', 'detail'])
        .expression((eb) =>
          eb
            .selectFrom('changed')
            .select(firstStatusRows('changed.id', 'changed.accepted_detail', 'changed.routed_detail')),
        )
        .returning('message_status.id'),
    )
    .selectFrom('changed')
    .select('changed.id');
}

/**
 * Deletes a row written beside its put whose payload never came, or may not come (its put failed or outlasted
 * the grace), with its status rows: its sender was never told 250/202, so it leaves no trace. With `attempt`,
 * only while the claim of that attempt still owns the row. True when a row went.
 */
export async function deleteNeverAcknowledged(
  db: Kysely<ExchangeTables>,
  envelopeId: string,
  attempt?: number,
): Promise<boolean> {
  const gone = await db
    .with('gone', (qc) => {
      const row = qc.deleteFrom('envelopes').where('id', '=', envelopeId).where('payload_pending', '=', true);
      const owned =
        attempt === undefined ? row : row.where('status', '=', 'delivering').where('attempts', '=', attempt);
      return owned.returning('id');
    })
    .with('history', (qc) =>
      qc
        .deleteFrom('message_status')
        .where('envelope_id', 'in', (sub) => sub.selectFrom('gone').select('gone.id'))
        .returning('message_status.id'),
    )
    .selectFrom('gone')
    .select('gone.id')
    .execute();
  return gone.length > 0;
}

/** How createEnvelopeWriter writes: `storing`, `stored` after the put, or `beside` the put. */
export type WriterWay = { stored: boolean; beside?: undefined } | { stored?: undefined; beside: { graceMs: number } };

/** What the envelope statement returns for each row it wrote. */
interface WrittenRow {
  id: string;
  outbound: OutboundStrategyName[];
  rule_id: string | null;
  created_at: Date;
  routed_detail: string;
}

async function insertEnvelopes(
  db: Kysely<ExchangeTables>,
  statement: (rows: string) => CompiledQuery<WrittenRow>,
  batch: NewEnvelope[],
  pending: boolean,
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
      size: e.stored?.size,
      accepted_detail: e.stored?.acceptedDetail,
      lease_until: e.bornLeaseUntil,
    })),
  );
  const written = (await db.executeQuery(statement(rows))).rows;
  const byId = new Map(written.map((row) => [row.id, row]));
  return batch.map((e) => {
    const row = byId.get(e.id);
    if (!row) return undefined;
    const { outbound, routed_detail: routedDetail } = row;
    return {
      outbound,
      routedDetail,
      claim: e.bornLeaseUntil && e.stored ? bornClaim(e, e.stored.size, row, pending) : undefined,
    };
  });
}

/**
 * The claim of a row born claimed, as claimDue would have returned it: what the intake sent, and what the
 * statement decided (the rule, the strategies) or stamped (the row's time, which a bounce's Arrival-Date gives).
 */
function bornClaim(e: NewEnvelope, size: number, row: WrittenRow, pending: boolean): Claim {
  return {
    id: e.id,
    channel: e.channel,
    sender: e.sender,
    recipients: e.recipients,
    size,
    payload_key: e.payloadKey,
    rule_id: row.rule_id,
    outbound: row.outbound,
    done_outbound: [],
    status: 'delivering',
    attempts: 1,
    next_attempt_at: row.created_at,
    lease_until: e.bornLeaseUntil ?? null,
    last_error: null,
    is_bounce: e.isBounce,
    body_8bitmime: e.body8bitmime,
    smtputf8: e.smtputf8,
    bounce_report: null,
    payload_pending: pending,
    created_at: row.created_at,
    updated_at: row.created_at,
    previous_status: 'accepted',
  };
}

/**
 * Matches each incoming message to its rule and writes its envelope: `storing`, its size not known yet; or,
 * `stored` or `beside`, `accepted` with its size and its first two status rows.
 */
function insertStatement(db: Kysely<ExchangeTables>, rows: string, way: WriterWay) {
  const stored = way.stored === true || way.beside !== undefined;
  // Beside the put, a row not born claimed is due for others only after the grace: its own instance claims
  // it by id before then (EnvelopeQueue.claimDue's `mine`); after a crash a claim decides by whether its
  // payload is there.
  const due = way.beside
    ? sql<Date>`case when routed.lease_until is null
        then now() + make_interval(secs => ${sql.lit(way.beside.graceMs / 1000)}) else now() end`
    : sql<Date>`now()`;
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
    size: number;
    accepted_detail: string;
    lease_until: Date | null;
  }>`jsonb_to_recordset(${rows}::jsonb)`.as<'incoming'>(INCOMING_COLUMNS);

  const base = db
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
          // Not known yet for a `storing` row (its acknowledgement sets it).
          sql<number>`coalesce(incoming.size, 0)`.as('size'),
          'incoming.accepted_detail',
          'incoming.lease_until',
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
          'attempts',
          'lease_until',
          'next_attempt_at',
          'payload_pending',
          'is_bounce',
          'body_8bitmime',
          'smtputf8',
        ])
        .expression((eb) =>
          eb.selectFrom('routed').select([
            'routed.id',
            'routed.channel',
            'routed.sender',
            'routed.recipients',
            'routed.size',
            'routed.payload_key',
            'routed.rule_id',
            'routed.outbound',
            // Born claimed when delivery reserved a slot for it (NewEnvelope.bornLeaseUntil).
            (stored
              ? sql<EnvelopeStatus>`case when routed.lease_until is null then 'accepted' else 'delivering' end`
              : sql.lit<EnvelopeStatus>('storing')
            ).as('status'),
            sql<number>`case when routed.lease_until is null then 0 else 1 end`.as('attempts'),
            'routed.lease_until',
            due.as('next_attempt_at'),
            sql.lit(way.beside !== undefined).as('payload_pending'),
            'routed.is_bounce',
            'routed.body_8bitmime',
            'routed.smtputf8',
          ]),
        )
        .returning(['id', 'outbound', 'rule_id', 'created_at']),
    );
  // A stored payload's row gets its `accepted` and `routed` status rows here; a `storing` row gets them
  // with its acknowledgement.
  const query = !stored
    ? base
    : base.with('history', (qc) =>
        qc
          .insertInto('message_status')
          .columns(['envelope_id', 'status', 'detail'])
          .expression((eb) =>
            eb
              .selectFrom('envelope')
              .innerJoin('routed', 'routed.id', 'envelope.id')
              .select(
                firstStatusRows('envelope.id', 'routed.accepted_detail', 'routed.routed_detail', 'routed.lease_until'),
              ),
          )
          .returning('message_status.id'),
      );
  return query
    .selectFrom('envelope')
    .innerJoin('routed', 'routed.id', 'envelope.id')
    .select(['envelope.id', 'envelope.outbound', 'envelope.rule_id', 'envelope.created_at', 'routed.routed_detail']);
}
