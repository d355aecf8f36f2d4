import { sql, type Kysely } from 'kysely';
import { Batcher, isDataError } from '../../kernel/batcher.ts';
import { type Clock, systemClock } from '../../kernel/clock.ts';
import { compileOnce, compileOnceWith } from '../../kernel/db/compile-once.ts';
import { everyColumn } from '../../kernel/db/prepared.ts';
import type { BounceReport, Envelope, EnvelopeStatus, ExchangeTables } from '../tables.ts';
import type { OutboundStrategyName } from '../outbound/strategy-names.ts';

/** Every column of an envelope, named: the claim is a prepared statement, so never `envelopes.*` (everyColumn). */
const ENVELOPE_COLUMNS = everyColumn<Envelope>()([
  'id',
  'channel',
  'sender',
  'recipients',
  'size',
  'payload_key',
  'rule_id',
  'outbound',
  'done_outbound',
  'status',
  'attempts',
  'next_attempt_at',
  'lease_until',
  'last_error',
  'is_bounce',
  'body_8bitmime',
  'smtputf8',
  'long_lines',
  'bounce_report',
  'created_at',
  'updated_at',
]);

/** An envelope a worker owns until `lease_until`; `attempts` (this attempt's number) fences its writes. */
export interface Claim extends Envelope {
  /** `delivering` when the envelope was taken over from a worker whose lease ran out. */
  previous_status: EnvelopeStatus;
}

/**
 * The delivery queue is the envelopes table itself (docs/design.md#delivery): due rows are claimed with
 * `FOR UPDATE SKIP LOCKED`, so any number of workers in any number of instances each get different
 * envelopes without waiting on each other. A claim is a lease: a worker that dies leaves its envelopes
 * `delivering` with a `lease_until` in the past, and the next claim takes them again.
 *
 * Every write after the claim is fenced by (id, status 'delivering', attempts): a worker that lost its
 * lease (stalled past it, and another worker took the envelope) changes nothing. Each status change
 * writes its message_status row in the same statement.
 *
 * The write every delivered message needs — `delivered`, which for an envelope with no refused recipient
 * also removes its row — is batched across the deliveries that finish at the same time (see Batcher): one
 * statement for many envelopes, each still fenced on its own. So is the removal of the other finished rows.
 */
export class EnvelopeQueue {
  private readonly deliveredBatch: Batcher<DeliveredItem, boolean>;
  private readonly removeBatch: Batcher<string, void>;

  constructor(
    private readonly db: Kysely<ExchangeTables>,
    private readonly leaseMs: number,
    /** Leases and retries are times of this clock, passed as parameters, so that a test clock drives them. */
    private readonly clock: Clock = systemClock,
  ) {
    const options = { maxBatch: 200, maxConcurrent: 2, retryAlone: isDataError };
    this.deliveredBatch = new Batcher((items) => this.markDeliveredNow(items), options);
    this.removeBatch = new Batcher((ids) => this.removeNow(ids), options);
  }

  /**
   * Takes up to `limit` due envelopes: those of crashed workers first, then waiting ones in the order they
   * fell due. Locking scans of their own rather than one with OR, so that each walks its partial index in
   * order and stops after `limit` rows: the cost stays flat however long the backlog grows (one scan with OR
   * had to read and sort every due row, ~45 ms per claim at 100,000 waiting envelopes).
   */
  async claimDue(limit: number): Promise<Claim[]> {
    const statement = this.claimStatement({ now: this.at(0), leaseUntil: this.at(this.leaseMs), limit });
    return (await this.db.executeQuery(statement)).rows as Claim[];
  }

  /**
   * claimDue's statement, built and compiled once (it runs for every few messages) and prepared on each
   * connection; the statuses that pick the partial indexes are literals, so the generic plan uses them too.
   */
  private readonly claimStatement = compileOnceWith(
    ({ now, leaseUntil, limit }: { now: Date; leaseUntil: Date; limit: number }) =>
      this.db
        .with('expired', (db) =>
          db
            .selectFrom('envelopes')
            .select(['id', 'status as previous_status'])
            .where('status', '=', sql.lit('delivering'))
            .where('lease_until', '<', now)
            .orderBy('lease_until')
            .limit(limit)
            .forUpdate()
            .skipLocked(),
        )
        .with('waiting', (db) =>
          db
            .selectFrom('envelopes')
            .select(['id', 'status as previous_status'])
            .where('status', 'in', [sql.lit<EnvelopeStatus>('accepted'), sql.lit<EnvelopeStatus>('retrying')])
            // Due by the service's clock (retries it set; a test clock moved on) or by the database's: a
            // fresh envelope's next_attempt_at is the database's now(), to the microsecond, which a
            // millisecond clock reading taken just after may not reach yet.
            .where('next_attempt_at', '<=', sql<Date>`greatest(now(), ${now})`)
            .orderBy('next_attempt_at')
            .limit(limit)
            .forUpdate()
            .skipLocked(),
        )
        .with('due', (db) =>
          db
            .selectFrom('expired')
            .select(['id', 'previous_status'])
            .unionAll(db.selectFrom('waiting').select(['id', 'previous_status']))
            .limit(limit),
        )
        .with('claimed', (db) =>
          db
            .updateTable('envelopes')
            .from('due')
            .set((eb) => ({
              status: 'delivering',
              attempts: eb('envelopes.attempts', '+', 1),
              lease_until: leaseUntil,
              updated_at: sql<Date>`now()`,
            }))
            .whereRef('envelopes.id', '=', 'due.id')
            .returning(ENVELOPE_COLUMNS.map((column) => `envelopes.${column}` as const))
            .returning('due.previous_status'),
        )
        .with('history', (db) =>
          db
            .insertInto('message_status')
            .columns(['envelope_id', 'status', 'detail'])
            .expression((eb) =>
              eb.selectFrom('claimed').select([
                'claimed.id',
                sql.lit('delivering').as('status'),
                sql<string>`'attempt ' || claimed.attempts || case when claimed.previous_status = 'delivering'
                      then ', after the lease of the previous worker ran out' else '' end`.as('detail'),
              ]),
            )
            .returning('message_status.id'),
        )
        .selectFrom('claimed')
        .selectAll(),
    { now: new Date(0), leaseUntil: new Date(0), limit: CLAIM_LIMIT_PLACEHOLDER },
    { prepare: true },
  );

  /** Extends the leases of envelopes still being delivered; returns the ids another worker has taken over. */
  async renewLeases(claims: Claim[]): Promise<string[]> {
    if (claims.length === 0) return [];
    const renewed = await this.db
      .updateTable('envelopes')
      .set({ lease_until: this.at(this.leaseMs) })
      .where('status', '=', 'delivering')
      .where((eb) => eb.or(claims.map((c) => eb.and([eb('id', '=', c.id), eb('attempts', '=', c.attempts)]))))
      .returning('id')
      .execute();
    const kept = new Set(renewed.map((r) => r.id));
    const unrenewed = claims.filter((c) => !kept.has(c.id));
    if (unrenewed.length === 0) return [];
    // Not renewed is not the same as lost: the worker may have written its own outcome (delivered,
    // retrying, failed) or even removed the row between that write and leaving the in-flight set. Only
    // a claim by another worker raises `attempts`, so that is the one sign of a takeover.
    const now = await this.db
      .selectFrom('envelopes')
      .select(['id', 'attempts'])
      .where(
        'id',
        'in',
        unrenewed.map((c) => c.id),
      )
      .execute();
    const attemptsNow = new Map(now.map((row) => [row.id, row.attempts]));
    return unrenewed.filter((c) => attemptsNow.has(c.id) && attemptsNow.get(c.id) !== c.attempts).map((c) => c.id);
  }

  /**
   * Records one outbound strategy as done, so later attempts skip it, with the recipients refused so far
   * (their bounce must not depend on this attempt finishing). False: the lease was lost.
   */
  async markStrategyDone(claim: Claim, strategy: OutboundStrategyName, report: BounceReport | null): Promise<boolean> {
    const result = await this.fenced(claim)
      .set({
        done_outbound: sql<OutboundStrategyName[]>`array_append(done_outbound, ${strategy}::text)`,
        bounce_report: jsonb(report),
      })
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Every strategy done: records the status with its history row, at once. Without refused recipients
   * (`report` null) the envelope's row is deleted in the same statement: nothing is left to do for it but
   * its payload's deletion (EnvelopeFinisher), and a payload whose row is gone is the orphan sweep's after a
   * crash. With them, the row stays `delivered` with its report until the bounce is queued. False when the
   * lease was lost.
   */
  async markDelivered(claim: Claim, detail: string, report: BounceReport | null): Promise<boolean> {
    return this.deliveredBatch.submit({
      id: claim.id,
      attempts: claim.attempts,
      outbound: claim.outbound,
      detail,
      report,
    });
  }

  private async markDeliveredNow(items: DeliveredItem[]): Promise<boolean[]> {
    const changed = (await this.db.executeQuery(this.deliveredStatement(JSON.stringify(items)))).rows;
    const kept = new Set(changed.map((row) => row.id));
    return items.map((item) => kept.has(item.id));
  }

  /**
   * `delivered` for a batch, each envelope fenced on its own, with its history row (compiled once). An
   * envelope with no refused recipient (no report) has nothing left to do but its payload's deletion, so its
   * row is deleted here rather than updated and deleted again by the clean-up; one with a report stays
   * `delivered` for its bounce.
   */
  private readonly deliveredStatement = compileOnce(
    (items: string) =>
      this.db
        .with('done', (qc) =>
          qc
            .selectFrom(
              sql<DeliveredItem>`jsonb_to_recordset(${items}::jsonb)`.as<'done'>(
                sql`done(id uuid, attempts integer, outbound text[], detail text, report jsonb)`,
              ),
            )
            .selectAll(),
        )
        .with('removed', (qc) =>
          qc
            .deleteFrom('envelopes')
            .using('done')
            .whereRef('envelopes.id', '=', 'done.id')
            .whereRef('envelopes.attempts', '=', 'done.attempts')
            .where('envelopes.status', '=', sql.lit('delivering'))
            .where('done.report', 'is', null)
            .returning(['envelopes.id', 'done.detail']),
        )
        .with('changed', (qc) =>
          qc
            .updateTable('envelopes')
            .from('done')
            .set({
              status: sql.lit('delivered'),
              done_outbound: sql<OutboundStrategyName[]>`done.outbound`,
              last_error: null,
              bounce_report: sql<BounceReport | null>`done.report`,
              lease_until: null,
              updated_at: sql<Date>`now()`,
            })
            .whereRef('envelopes.id', '=', 'done.id')
            .whereRef('envelopes.attempts', '=', 'done.attempts')
            // A literal, as in the claim: the generic plan of the prepared statement uses envelopes_lease.
            .where('envelopes.status', '=', sql.lit('delivering'))
            .where('done.report', 'is not', null)
            .returning(['envelopes.id', 'done.detail']),
        )
        .with('finished', (qc) =>
          qc
            .selectFrom('removed')
            .select(['removed.id', 'removed.detail'])
            .unionAll(qc.selectFrom('changed').select(['changed.id', 'changed.detail'])),
        )
        .with('history', (qc) =>
          qc
            .insertInto('message_status')
            .columns(['envelope_id', 'status', 'detail'])
            .expression((eb) =>
              eb.selectFrom('finished').select(['finished.id', sql.lit('delivered').as('status'), 'finished.detail']),
            )
            .returning('message_status.id'),
        )
        .selectFrom('finished')
        .select('finished.id'),
    '["compile-once placeholder"]',
    { prepare: true },
  );

  async markRetrying(claim: Claim, delayMs: number, error: string, detail: string): Promise<boolean> {
    return this.transition(claim, 'retrying', detail, { last_error: error, next_attempt_at: this.at(delayMs) });
  }

  async markFailed(claim: Claim, error: string, report: BounceReport): Promise<boolean> {
    return this.transition(claim, 'failed', error, { last_error: error, bounce_report: jsonb(report) });
  }

  /** A status row outside the claim cycle (`bounced`, written after the bounce was queued). */
  async recordStatus(envelopeId: string, status: EnvelopeStatus, detail: string): Promise<void> {
    await this.db.insertInto('message_status').values({ envelope_id: envelopeId, status, detail }).execute();
  }

  async hasStatus(envelopeId: string, status: EnvelopeStatus): Promise<boolean> {
    const row = await this.db
      .selectFrom('message_status')
      .select('id')
      .where('envelope_id', '=', envelopeId)
      .where('status', '=', status)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Deletes a finished envelope's row (its payload is already gone); status history stays. A delivered one
   * without refused recipients has none left (markDelivered removed it).
   */
  async remove(envelopeId: string): Promise<void> {
    await this.removeBatch.submit(envelopeId);
  }

  private async removeNow(ids: string[]): Promise<void[]> {
    await this.db
      .deleteFrom('envelopes')
      .where('id', 'in', ids)
      .where('status', 'in', ['delivered', 'failed'])
      .execute();
    return ids.map(() => undefined);
  }

  /**
   * Finished envelopes whose clean-up did not happen (a crash or an object-store outage between the
   * status change and the deletes), untouched for `olderThanMs`. Touching `updated_at` leases them to
   * this caller, as claimDue does for deliveries.
   */
  async claimUnfinished(limit: number, olderThanMs: number): Promise<Envelope[]> {
    return this.db
      .updateTable('envelopes')
      .set({ updated_at: this.at(0) })
      .where('id', 'in', (db) =>
        db
          .selectFrom('envelopes')
          .select('id')
          .where('status', 'in', ['delivered', 'failed'])
          .where('updated_at', '<', this.at(-olderThanMs))
          .orderBy('updated_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .returningAll()
      .execute();
  }

  /** `ms` from now by the clock (negative: before now). */
  private at(ms: number): Date {
    return new Date(this.clock.now() + ms);
  }

  private fenced(claim: Claim) {
    return this.db
      .updateTable('envelopes')
      .where('id', '=', claim.id)
      .where('status', '=', 'delivering')
      .where('attempts', '=', claim.attempts);
  }

  /** Changes the status and writes the history row in one statement; false when the lease was lost. */
  private async transition(
    claim: Claim,
    status: EnvelopeStatus,
    detail: string,
    changes: Record<string, unknown>,
  ): Promise<boolean> {
    const result = await this.db
      .with('changed', () =>
        this.fenced(claim)
          .set({ ...changes, status, lease_until: null, updated_at: sql<Date>`now()` })
          .returning('id'),
      )
      .insertInto('message_status')
      .columns(['envelope_id', 'status', 'detail'])
      .expression((eb) =>
        eb
          .selectFrom('changed')
          .select(['changed.id', sql.lit(status).as('status'), sql<string>`${detail}::text`.as('detail')]),
      )
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }
}

/** Stands for claimDue's limit while its statement is compiled: a value no other parameter has. */
const CLAIM_LIMIT_PLACEHOLDER = 2 ** 31 - 7;

/** One markDelivered call, as the batched statement reads it. */
interface DeliveredItem {
  id: string;
  attempts: number;
  outbound: OutboundStrategyName[];
  detail: string;
  report: BounceReport | null;
}

const jsonb = (value: BounceReport | null) =>
  value === null ? null : sql<BounceReport>`${JSON.stringify(value)}::jsonb`;
