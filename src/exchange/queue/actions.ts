import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import { type Clock, systemClock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import { readHeaderBlock } from '../outbound/header-block.ts';
import { byRule, decide, headerFields, needsHeaders, subjectStrip } from '../rules/criteria.ts';
import type { RuleStore } from '../rules/store.ts';
import type { EnvelopeStatus, ExchangeTables } from '../tables.ts';

/**
 * Which envelopes an operator's action takes (POST /v1/admin/queue/{action}): given ids, or every one
 * matching the filter; every given field must match. `all` says "every envelope" out loud, so that an
 * empty body never acts on the whole queue by mistake.
 */
export interface QueueSelection {
  ids?: string[];
  status?: 'accepted' | 'retrying' | 'held';
  /** The envelope sender, exactly ('' for the null sender <>). */
  sender?: string;
  /** A recipient in this domain (or below it). */
  recipientDomain?: string;
  /** Older than this many seconds. */
  olderThanSeconds?: number;
  all?: boolean;
}

export type QueueAction = 'flush' | 'hold' | 'release' | 'requeue' | 'delete';

export interface ActionResult {
  /** The envelopes the action changed. */
  ids: string[];
  /** Selected envelopes it left alone, each with the reason (being delivered, or not in a status it applies to). */
  skipped: Array<{ id: string; reason: string }>;
}

/**
 * Which statuses each action applies to. An envelope being delivered (`delivering`) is never touched: its
 * worker owns it until its lease ends, and the worker's writes are fenced on that status, so changing it
 * here would race the outcome. Held envelopes leave the claim's statuses (accepted, retrying), so no worker
 * takes one until it is released.
 */
const APPLIES_TO: Record<QueueAction, EnvelopeStatus[]> = {
  flush: ['accepted', 'retrying'],
  hold: ['accepted', 'retrying'],
  release: ['held'],
  requeue: ['accepted', 'retrying', 'held'],
  delete: ['accepted', 'retrying', 'held'],
};

/** Postfix's postqueue -f and postsuper -h/-H/-r/-d for the exchange's queue (the envelopes table). */
export class QueueActions {
  constructor(
    private readonly db: Kysely<ExchangeTables>,
    private readonly deps: { objects: ObjectStore; rules: RuleStore; logger: Logger; clock?: Clock },
  ) {}

  async run(action: QueueAction, selection: QueueSelection): Promise<ActionResult> {
    const unrouted = new Map<string, string>();
    const done =
      action === 'flush'
        ? await this.flush(selection)
        : action === 'hold'
          ? await this.hold(selection)
          : action === 'release'
            ? await this.release(selection)
            : action === 'requeue'
              ? await this.requeue(selection, unrouted)
              : await this.delete(selection);
    return { ids: done, skipped: await this.skipped(action, selection, done, unrouted) };
  }

  /** postqueue -f: every selected deferred envelope is due now. */
  private async flush(selection: QueueSelection): Promise<string[]> {
    return this.change(selection, APPLIES_TO.flush, { next_attempt_at: this.now() }, null);
  }

  /** postsuper -h: held envelopes are never claimed (the claim takes accepted and retrying ones only). */
  private async hold(selection: QueueSelection): Promise<string[]> {
    return this.change(
      selection,
      APPLIES_TO.hold,
      { status: 'held' },
      { status: 'held', detail: 'held by an operator' },
    );
  }

  /**
   * postsuper -H: back to the status the claim takes, due now; `retrying` when it had been tried before, so
   * that the history and `sealpost queue` still tell a first attempt from a retry.
   */
  private async release(selection: QueueSelection): Promise<string[]> {
    const rows = await this.db
      .with('changed', (db) =>
        db
          .updateTable('envelopes')
          .set({
            status: sql<EnvelopeStatus>`case when attempts > 0 then 'retrying' else 'accepted' end`,
            next_attempt_at: this.now(),
            updated_at: sql<Date>`now()`,
          })
          .where((eb) => this.where(eb, selection, APPLIES_TO.release))
          .returning(['id', 'status']),
      )
      .insertInto('message_status')
      .columns(['envelope_id', 'status', 'detail'])
      .expression((eb) =>
        eb
          .selectFrom('changed')
          .select(['changed.id', 'changed.status', sql.lit('released by an operator').as('detail')]),
      )
      .returning('envelope_id')
      .execute();
    return rows.map((row) => row.envelope_id);
  }

  /**
   * postsuper -r: the envelope is routed again by the rules as they are now (after a rule was fixed), and
   * is due now. Strategies already delivered stay done if the new rule keeps them. An envelope whose
   * recipients now fall to different rules, or to none, is left as it is, with the reason.
   */
  private async requeue(selection: QueueSelection, unrouted: Map<string, string>): Promise<string[]> {
    const envelopes = await this.db
      .selectFrom('envelopes')
      .select(['id', 'channel', 'sender', 'recipients', 'payload_key', 'done_outbound'])
      .where((eb) => this.where(eb, selection, APPLIES_TO.requeue))
      .execute();
    const done: string[] = [];
    for (const envelope of envelopes) {
      const candidates = await this.deps.rules.forChannel(envelope.channel);
      const headers = needsHeaders(candidates)
        ? headerFields(await readHeaderBlock(await this.deps.objects.get(envelope.payload_key)))
        : undefined;
      const groups = byRule(decide(candidates, { ...envelope, headers }));
      const covered = groups.reduce((sum, group) => sum + group.recipients.length, 0);
      if (groups.length !== 1 || covered !== envelope.recipients.length) {
        unrouted.set(
          envelope.id,
          groups.length > 1 ? 'its recipients now fall to different rules' : 'no rule takes every recipient now',
        );
        continue;
      }
      const rule = groups[0]!.rule;
      const detail = `requeued by an operator: rule "${rule.name}" (${rule.id}) -> ${rule.outbound.join(', ')}`;
      const changed = await this.db
        .with('changed', (db) =>
          db
            .updateTable('envelopes')
            .set({
              rule_id: rule.id,
              outbound: rule.outbound,
              done_outbound: envelope.done_outbound.filter((name) => rule.outbound.includes(name)),
              subject_strip: subjectStrip(rule.criteria),
              status: sql<EnvelopeStatus>`case when attempts > 0 then 'retrying' else 'accepted' end`,
              next_attempt_at: this.now(),
              updated_at: sql<Date>`now()`,
            })
            .where('id', '=', envelope.id)
            .where('status', 'in', APPLIES_TO.requeue)
            .returning(['id', 'status']),
        )
        .insertInto('message_status')
        .columns(['envelope_id', 'status', 'detail'])
        .expression((eb) =>
          eb.selectFrom('changed').select(['changed.id', 'changed.status', sql<string>`${detail}::text`.as('detail')]),
        )
        .returning('envelope_id')
        .executeTakeFirst();
      if (changed) done.push(changed.envelope_id);
    }
    return done;
  }

  /**
   * postsuper -d: the row goes with a `deleted` history entry in one statement, then the payload. A payload
   * whose deletion fails has no row any more: the orphan sweep deletes it later.
   */
  private async delete(selection: QueueSelection): Promise<string[]> {
    const rows = await this.db
      .with('removed', (db) =>
        db
          .deleteFrom('envelopes')
          .where((eb) => this.where(eb, selection, APPLIES_TO.delete))
          .returning(['id', 'payload_key']),
      )
      .with('history', (db) =>
        db
          .insertInto('message_status')
          .columns(['envelope_id', 'status', 'detail'])
          .expression((eb) =>
            eb
              .selectFrom('removed')
              .select(['removed.id', sql.lit('deleted').as('status'), sql.lit('deleted by an operator').as('detail')]),
          ),
      )
      .selectFrom('removed')
      .select(['id', 'payload_key'])
      .execute();
    if (rows.length > 0) {
      try {
        await this.deps.objects.deleteMany(rows.map((row) => row.payload_key));
      } catch (err) {
        this.deps.logger.warn(
          { err, envelopes: rows.length },
          'deleted envelopes kept their payloads; the orphan sweep deletes them',
        );
      }
      this.deps.logger.info({ envelopeIds: rows.map((row) => row.id) }, 'envelopes deleted by an operator');
    }
    return rows.map((row) => row.id);
  }

  /** Updates the selected envelopes in `statuses`, writing a history row for each when `history` is given. */
  private async change(
    selection: QueueSelection,
    statuses: EnvelopeStatus[],
    changes: { status?: EnvelopeStatus; next_attempt_at?: Date },
    history: { status: EnvelopeStatus; detail: string } | null,
  ): Promise<string[]> {
    const update = (db: Kysely<ExchangeTables>) =>
      db
        .updateTable('envelopes')
        .set({ ...changes, updated_at: sql<Date>`now()` })
        .where((eb) => this.where(eb, selection, statuses))
        .returning('id');
    if (!history) return (await update(this.db).execute()).map((row) => row.id);
    const rows = await this.db
      .with('changed', () => update(this.db))
      .insertInto('message_status')
      .columns(['envelope_id', 'status', 'detail'])
      .expression((eb) =>
        eb
          .selectFrom('changed')
          .select([
            'changed.id',
            sql.lit(history.status).as('status'),
            sql<string>`${history.detail}::text`.as('detail'),
          ]),
      )
      .returning('envelope_id')
      .execute();
    return rows.map((row) => row.envelope_id);
  }

  /** Selected ids the action did not change, with why (only for ids named: a filter skips silently). */
  private async skipped(
    action: QueueAction,
    selection: QueueSelection,
    done: string[],
    unrouted: Map<string, string>,
  ): Promise<ActionResult['skipped']> {
    const left = (selection.ids ?? []).filter((id) => !done.includes(id));
    if (left.length === 0) return [];
    const rows = await this.db.selectFrom('envelopes').select(['id', 'status']).where('id', 'in', left).execute();
    const status = new Map(rows.map((row) => [row.id, row.status]));
    return left.map((id) => {
      const now = status.get(id);
      const reason =
        now === undefined
          ? 'not in the queue'
          : (unrouted.get(id) ??
            (now === 'delivering'
              ? 'being delivered; try again once this attempt is over'
              : `${action} does not apply to a ${now} envelope`));
      return { id, reason };
    });
  }

  private where(
    eb: ExpressionBuilder<ExchangeTables, 'envelopes'>,
    selection: QueueSelection,
    statuses: EnvelopeStatus[],
  ) {
    const conditions: Expression<SqlBool>[] = [eb('status', 'in', statuses)];
    // The route's schema takes 1 to 1,000 ids: never an empty list, which `in ()` could not say.
    if (selection.ids) conditions.push(eb('id', 'in', selection.ids));
    if (selection.status) conditions.push(eb('status', '=', selection.status));
    if (selection.sender !== undefined) conditions.push(eb('sender', '=', selection.sender));
    if (selection.recipientDomain !== undefined) {
      const domain = selection.recipientDomain.toLowerCase();
      conditions.push(
        sql<SqlBool>`exists (select 1 from unnest(${sql.ref('recipients')}) as r(address)
          where lower(split_part(r.address, '@', 2)) = ${domain}
             or lower(split_part(r.address, '@', 2)) like ${`%.${domain}`})`,
      );
    }
    if (selection.olderThanSeconds !== undefined) {
      conditions.push(
        eb('created_at', '<', new Date((this.deps.clock ?? systemClock).now() - selection.olderThanSeconds * 1000)),
      );
    }
    return eb.and(conditions);
  }

  private now(): Date {
    return new Date((this.deps.clock ?? systemClock).now());
  }
}
