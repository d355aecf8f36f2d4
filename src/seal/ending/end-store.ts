import { type Expression, type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { Clock } from '../../kernel/clock.ts';
import type { EndReason, SealedMessage, SealTables } from '../tables.ts';

/** One cluster to ask to unpin an ended message's CID, as claimed by an instance. */
export interface ClaimedEndWork {
  sealedId: string;
  cluster: string;
  cid: string;
  /** Attempts so far, this one included. */
  attempts: number;
}

type Due = SelectQueryBuilder<SealTables, 'sealed_messages', { id: string }>;

/**
 * The end of sealed messages in PostgreSQL (docs/specification.md#end-dates). An end for everyone is one
 * statement: the end recorded, the wrapped key destroyed, the unpins queued (one seal_end_work row per cluster in
 * force), the message's open pins taken off the follower's schedule and the trail's entry written, together or
 * not at all.
 */
export class EndStore {
  constructor(
    private readonly db: Kysely<SealTables>,
    private readonly clock: Clock,
  ) {}

  /**
   * Ends up to `limit` messages whose end date has passed, as of their end date. SKIP LOCKED and the guard on
   * ended_at: two instances never end one message twice, and each ended message is returned once overall.
   */
  async expireDue(clusters: string[], limit: number): Promise<Array<{ id: string; cid: string }>> {
    const now = new Date(this.clock.now());
    return this.end(
      this.db
        .selectFrom('sealed_messages')
        .select('id')
        .where('ended_at', 'is', null)
        .where('expires_at', '<=', now)
        .orderBy('expires_at')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
      { at: sql<Date>`m.expires_at`, reason: 'expired', note: null },
      clusters,
    );
  }

  /**
   * Withdraws a message for everyone; false when it had ended already (an expiry counts from its end date,
   * even before the pass recorded it). Waits for an expiry pass that holds the row, then sees its end.
   */
  async withdraw(id: string, note: string, clusters: string[]): Promise<boolean> {
    const now = new Date(this.clock.now());
    const ended = await this.end(
      this.db
        .selectFrom('sealed_messages')
        .select('id')
        .where('id', '=', id)
        .where('ended_at', 'is', null)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .forUpdate(),
      { at: sql<Date>`${now}::timestamptz`, reason: 'withdrawn', note },
      clusters,
    );
    return ended.length > 0;
  }

  /** Withdraws a message for one recipient (lower-cased address); false when it was withdrawn for them already. */
  async withdrawForRecipient(id: string, emailKey: string, note: string): Promise<boolean> {
    const now = new Date(this.clock.now());
    const row = await this.db
      .with('withdrawn', (db) =>
        db
          .updateTable('sealed_recipients')
          .set({ withdrawn_at: now, withdraw_note: note })
          .where('sealed_id', '=', id)
          .where('email_key', '=', emailKey)
          .where('withdrawn_at', 'is', null)
          .returning(['sealed_id', 'email']),
      )
      .with('trail', (db) =>
        db
          .insertInto('sealed_trail')
          .columns(['sealed_id', 'at', 'event', 'recipient', 'detail'])
          .expression(
            db
              .selectFrom('withdrawn')
              .select([
                'withdrawn.sealed_id',
                sql<Date>`cast(${now} as timestamptz)`.as('at'),
                sql<'withdrawn'>`'withdrawn'`.as('event'),
                'withdrawn.email',
                sql<string>`cast(${JSON.stringify({ scope: 'recipient', reason: note })} as jsonb)`.as('detail'),
              ]),
          )
          .returning('sealed_id'),
      )
      .selectFrom('withdrawn')
      .select('sealed_id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Gives a running message a new end date and writes `end_date_changed`, in one statement; false when it has
   * ended (a recorded end, or an end date already passed). The bounds are the caller's.
   */
  async changeEndDate(id: string, expiresAt: Date): Promise<boolean> {
    const now = new Date(this.clock.now());
    const row = await this.db
      .with('changed', (db) =>
        db
          .updateTable('sealed_messages')
          .set({ expires_at: expiresAt })
          .where('id', '=', id)
          .where('ended_at', 'is', null)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
          .returning('id'),
      )
      .with('trail', (db) =>
        db
          .insertInto('sealed_trail')
          .columns(['sealed_id', 'at', 'event', 'detail'])
          .expression(
            db
              .selectFrom('changed')
              .select([
                'changed.id',
                sql<Date>`cast(${now} as timestamptz)`.as('at'),
                sql<'end_date_changed'>`'end_date_changed'`.as('event'),
                sql<string>`cast(${JSON.stringify({ expiresAt: expiresAt.toISOString() })} as jsonb)`.as('detail'),
              ]),
          )
          .returning('sealed_id'),
      )
      .selectFrom('changed')
      .select('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  private async end(
    due: Due,
    end: { at: Expression<Date>; reason: EndReason; note: string | null },
    clusters: string[],
  ): Promise<Array<{ id: string; cid: string }>> {
    const now = new Date(this.clock.now());
    const detail = end.reason === 'withdrawn' ? JSON.stringify({ scope: 'everyone', reason: end.note }) : null;
    return (
      this.db
        .with('due', () => due)
        .with('ended', (db) =>
          db
            .updateTable('sealed_messages as m')
            .from('due')
            .set({ ended_at: end.at, end_reason: end.reason, end_note: end.note, wrapped_key: null })
            .whereRef('m.id', '=', 'due.id')
            .where('m.ended_at', 'is', null)
            .returning(['m.id', 'm.cid', 'm.ended_at']),
        )
        // The trail's `expired` or `withdrawn` entry, with the end itself (docs/specification.md#trail).
        .with('trail', (db) =>
          db
            .insertInto('sealed_trail')
            .columns(['sealed_id', 'at', 'event', 'detail'])
            .expression(
              db
                .selectFrom('ended')
                .select([
                  'ended.id',
                  sql<Date>`ended.ended_at`.as('at'),
                  sql<EndReason>`cast(${end.reason} as text)`.as('event'),
                  sql<string | null>`cast(${detail} as jsonb)`.as('detail'),
                ]),
            )
            .returning('sealed_id'),
        )
        .with('work', (db) =>
          db
            .insertInto('seal_end_work')
            .columns(['sealed_id', 'cluster', 'cid', 'next_attempt_at'])
            .expression(
              clusters
                .map((cluster) =>
                  db
                    .selectFrom('ended')
                    .select((eb) => [
                      eb.ref('ended.id').as('sealed_id'),
                      sql<string>`cast(${cluster} as text)`.as('cluster'),
                      eb.ref('ended.cid').as('cid'),
                      sql<Date>`cast(${now} as timestamptz)`.as('next_attempt_at'),
                    ]),
                )
                .reduce((union, select) => union.unionAll(select)),
            )
            .onConflict((oc) => oc.columns(['sealed_id', 'cluster']).doNothing())
            .returning('sealed_id'),
        )
        .with('unfollowed', (db) =>
          db
            .updateTable('sealed_pins')
            .set({ next_attempt_at: null })
            .where('status', '<>', 'pinned')
            .where('sealed_id', 'in', db.selectFrom('ended').select('ended.id'))
            .returning('sealed_id'),
        )
        .selectFrom('ended')
        .select(['ended.id', 'ended.cid'])
        .execute()
    );
  }

  /**
   * Which of `ids` have ended at `now`, with their end columns: recorded ends and end dates passed alike.
   */
  async ended(
    ids: string[],
  ): Promise<Array<Pick<SealedMessage, 'id' | 'expires_at' | 'ended_at' | 'end_reason' | 'end_note'>>> {
    if (ids.length === 0) return [];
    const now = new Date(this.clock.now());
    return this.db
      .selectFrom('sealed_messages')
      .select(['id', 'expires_at', 'ended_at', 'end_reason', 'end_note'])
      .where('id', 'in', ids)
      .where((eb) => eb.or([eb('ended_at', 'is not', null), eb('expires_at', '<=', now)]))
      .orderBy('id')
      .execute();
  }

  /**
   * Takes up to `limit` due unpins on the given clusters and pushes them to `leaseUntil`, counting the attempt,
   * so that other instances skip them while this one works (and take them again if it dies).
   */
  async claimWork(clusters: string[], limit: number, leaseUntil: Date): Promise<ClaimedEndWork[]> {
    if (clusters.length === 0) return [];
    const rows = await this.db
      .with('due', (db) =>
        db
          .selectFrom('seal_end_work')
          .select(['sealed_id', 'cluster'])
          .where('cluster', 'in', clusters)
          .where('next_attempt_at', '<=', new Date(this.clock.now()))
          .orderBy('next_attempt_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .updateTable('seal_end_work as work')
      .from('due')
      .set((eb) => ({ next_attempt_at: leaseUntil, attempts: eb('work.attempts', '+', 1) }))
      .whereRef('work.sealed_id', '=', 'due.sealed_id')
      .whereRef('work.cluster', '=', 'due.cluster')
      .returning(['work.sealed_id', 'work.cluster', 'work.cid', 'work.attempts'])
      .execute();
    return rows.map((row) => ({ sealedId: row.sealed_id, cluster: row.cluster, cid: row.cid, attempts: row.attempts }));
  }

  /** The cluster no longer pins the CID: nothing left to do there. */
  async workDone(work: ClaimedEndWork): Promise<void> {
    await this.db
      .deleteFrom('seal_end_work')
      .where('sealed_id', '=', work.sealedId)
      .where('cluster', '=', work.cluster)
      .execute();
  }

  async workFailed(work: ClaimedEndWork, error: string, nextAttemptAt: Date): Promise<void> {
    await this.db
      .updateTable('seal_end_work')
      .set({ error, next_attempt_at: nextAttemptAt })
      .where('sealed_id', '=', work.sealedId)
      .where('cluster', '=', work.cluster)
      .execute();
  }

  /** Unpins not confirmed yet (the gauge). */
  async waiting(): Promise<number> {
    const row = await this.db
      .selectFrom('seal_end_work')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }
}
