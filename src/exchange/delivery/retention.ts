import type { Logger } from '../../kernel/logger.ts';
import { Batcher } from '../../kernel/batcher.ts';
import { DELETE_MANY_MAX, ObjectNotFoundError, type ObjectStore } from '../../kernel/objects/index.ts';
import type { Intake } from '../handoff.ts';
import type { ExchangeMetrics } from '../metrics.ts';
import type { Envelope } from '../tables.ts';
import { readHeaderBlock } from '../outbound/header-block.ts';
import { bounceRefusal, composeBounce, isNotice, reportParameters } from './bounce.ts';
import type { EnvelopeQueue } from './queue.ts';

export interface FinisherDeps {
  queue: EnvelopeQueue;
  objects: ObjectStore;
  intake: Pick<Intake, 'accept'>;
  metrics: ExchangeMetrics;
  logger: Logger;
  /** SMTP_HOSTNAME, the bounce's Reporting-MTA. */
  reportingMta: string;
  /** NOTIFY_FROM, the bounce's From header. */
  notifyFrom: string;
  /**
   * BOUNCE_NOTICE_RECIPIENT: where a bounce of ours that could not be delivered goes. (A bounce is not signed
   * here: relay-message.ts signs it, like all mail From DKIM_DOMAIN, over the bytes that go out.)
   */
  noticeRecipient: string;
  /** Whether the intake is busy (Intake.recentlyBusy): payload deletions then wait, see below. */
  intakeBusy?: () => boolean;
  /** Clean-ups finishSoon() runs at once (default DELETE_MANY_MAX); the rest wait (see finishSoon). */
  maxRunning?: number;
}

/** Whether a finished envelope's report calls for a bounce. */
const needsBounce = (envelope: Pick<Envelope, 'bounce_report'>) => (envelope.bounce_report?.recipients.length ?? 0) > 0;

/** What a clean-up deletes: the payload, then the row unless the `delivered` mark removed it already. */
type Cleanup = Pick<Envelope, 'id' | 'payload_key'> & { rowRemoved: boolean };

/** Clean-ups that may wait in memory behind those under way (an id and a key each: a few MB at most). */
export const CLEANUPS_WAITING_MAX = 20_000;

/** The longest a payload deletion waits for the intake to go quiet. */
export const DELETION_HOLD_MAX_MS = 5000;

/**
 * What happens to an envelope once it is `delivered` or `failed` (docs/specification.md#retention, rules 1
 * and 2): the bounce, if its report calls for one, then the payload is deleted from the object store and the
 * envelope row from the database; the status history stays. A delivered envelope with no refused recipient
 * has lost its row already, in the statement that marked it `delivered` (EnvelopeQueue.markDelivered): only
 * its payload is left to delete (`rowRemoved`).
 *
 * Each step can be repeated safely, so an envelope whose finishing was cut short (a crash, an
 * object-store outage) is finished later: where the row is still there, by sweep(), which finds it
 * `delivered` or `failed` (the payload goes before the row, so such a row is never missing while its
 * payload remains, and a `bounced` history row records that the bounce was queued); where the row went
 * with `delivered`, by the orphan sweep (OrphanPayloadSweep), which deletes a payload that has no row. A
 * crash between queueing the bounce and writing that row can send the bounce twice; none is ever lost.
 *
 * The bounce goes through MessageIntake as a new envelope (null sender, is_bounce, routed to smtp),
 * so it gets durable retries of its own, and, being a bounce, never bounces itself: one that fails for good
 * goes to the postmaster instead (notice()), and a failed notice only to the log.
 */
export class EnvelopeFinisher {
  /** drain() was called: the instance is stopping, and deletions are no longer held. */
  private draining = false;
  /** Clean-ups started and not done yet (at most `maxRunning`, bounces aside). */
  private readonly running = new Set<Promise<void>>();
  /** Clean-ups of delivered envelopes waiting for one of those to end (see finishSoon). */
  private waiting: Cleanup[] = [];
  /** Clean-ups that went through `waiting` since it was last empty, and those left to sweep() past it. */
  private behind = { waited: 0, leftToSweep: 0 };
  /**
   * Payload keys of envelopes whose row the `delivered` mark removed, while their clean-up waits or runs
   * (until the deletion is over): they have no row, and the orphan sweep must not take them for orphans.
   */
  private readonly rowless = new Set<string>();
  /**
   * Payload deletions of envelopes finished at about the same time go out together: one DeleteObjects call
   * for up to 1,000 keys on S3 instead of a DELETE each (a store round trip per delivered message saved).
   * While the intake is busy they wait (up to 1,000 keys or DELETION_HOLD_MAX_MS): a deletion promises no
   * one anything, and at one connection each delivered message would otherwise cost the store (and this
   * process) a call of its own at the moment the intake needs them (docs/design.md#delivery).
   */
  private readonly deletions: Batcher<string, undefined>;
  private readonly maxRunning: number;

  constructor(private readonly deps: FinisherDeps) {
    this.maxRunning = deps.maxRunning ?? DELETE_MANY_MAX;
    this.deletions = new Batcher(
      async (keys) => {
        await deps.objects.deleteMany(keys);
        return keys.map(() => undefined);
      },
      {
        maxBatch: DELETE_MANY_MAX,
        maxConcurrent: 2,
        hold: deps.intakeBusy
          ? { while: () => !this.draining && deps.intakeBusy!(), maxMs: DELETION_HOLD_MAX_MS }
          : undefined,
      },
    );
  }

  /** `rowRemoved`: the `delivered` mark deleted the row already (no refused recipient, so no bounce). */
  async finish(envelope: Envelope, rowRemoved = false): Promise<void> {
    if (needsBounce(envelope)) await this.bounce(envelope);
    await this.clean({ id: envelope.id, payload_key: envelope.payload_key, rowRemoved });
  }

  /** Whether this payload's deletion is under way or waiting here while its row is gone (see `rowless`). */
  deleting(payloadKey: string): boolean {
    return this.rowless.has(payloadKey);
  }

  /**
   * Starts finish() and returns before it is done, so that a delivery worker can take the next message
   * while the payload and row of the last one are deleted (the status is already recorded). A failure
   * is logged and left to sweep().
   *
   * A clean-up never holds a delivery up. Past `maxRunning` clean-ups under way, a delivered envelope's
   * clean-up waits in memory (its id and payload key, up to CLEANUPS_WAITING_MAX) and starts when one ends;
   * past that too, it is left as after a crash: sweep() finishes a row still `delivered` or `failed`, and
   * the orphan sweep deletes a payload whose row is gone, each within two DELIVERY_LEASE periods. A store
   * that cannot take the deletions as fast as the deliveries (a burst of deliveries, or the intake's puts
   * keeping it busy) thus delays the deletions, never the deliveries, and the memory the clean-ups hold
   * stays bounded. A bounce is written at once, whatever the count.
   */
  finishSoon(envelope: Envelope, rowRemoved = false): void {
    if (this.running.size < this.maxRunning || needsBounce(envelope)) {
      this.start(envelope.id, () => this.finish(envelope, rowRemoved));
      return;
    }
    // Said once per stretch behind: the counts are reset when the waiting clean-ups have all started.
    if (this.behind.waited + this.behind.leftToSweep === 0) {
      this.deps.logger.info(
        { running: this.running.size },
        'payload deletions are behind the deliveries; the clean-ups past them wait',
      );
    }
    if (this.waiting.length < CLEANUPS_WAITING_MAX && !this.draining) {
      this.waiting.push({ id: envelope.id, payload_key: envelope.payload_key, rowRemoved });
      if (rowRemoved) this.rowless.add(envelope.payload_key);
      this.behind.waited++;
    } else {
      this.behind.leftToSweep++;
    }
  }

  /** Runs one envelope's clean-up among the running ones; a failure is the sweep's to retry. */
  private start(envelopeId: string, work: () => Promise<void>): void {
    const done = work().catch((error: unknown) => {
      this.deps.logger.warn({ err: error, envelopeId }, 'could not finish the envelope now; the retention sweep will');
    });
    this.running.add(done);
    void done.finally(() => {
      this.running.delete(done);
      this.startWaiting();
    });
  }

  /** Starts waiting clean-ups while there is room; says so once they have all started. */
  private startWaiting(): void {
    while (this.waiting.length > 0 && this.running.size < this.maxRunning) {
      const next = this.waiting.shift()!;
      this.start(next.id, () => this.clean(next));
    }
    if (this.waiting.length === 0 && this.behind.waited + this.behind.leftToSweep > 0) {
      this.deps.logger.info(this.behind, 'payload deletions are keeping up with the deliveries again');
      this.behind = { waited: 0, leftToSweep: 0 };
    }
  }

  /**
   * The payload, then the row (unless it went with `delivered`): a row is never missing while its payload
   * remains, and a payload without a row is in `rowless` until its deletion is over.
   */
  private async clean(cleanup: Cleanup): Promise<void> {
    if (cleanup.rowRemoved) this.rowless.add(cleanup.payload_key);
    try {
      await this.deletions.submit(cleanup.payload_key);
    } finally {
      if (cleanup.rowRemoved) this.rowless.delete(cleanup.payload_key);
    }
    if (!cleanup.rowRemoved) await this.deps.queue.remove(cleanup.id);
  }

  /**
   * At shutdown: waits for the clean-ups under way, holding no deletion back. Those still waiting are left
   * to the retention sweep (their rows say what is left to do), or to the orphan sweep where the row is gone,
   * so that stopping does not wait for them.
   */
  async drain(): Promise<void> {
    this.draining = true;
    if (this.waiting.length > 0) {
      this.deps.logger.info(
        { leftToSweep: this.waiting.length + this.behind.leftToSweep },
        'stopping: the clean-ups still waiting are left to the retention sweep',
      );
    }
    for (const cleanup of this.waiting) this.rowless.delete(cleanup.payload_key);
    this.waiting = [];
    this.behind = { waited: 0, leftToSweep: 0 };
    this.deletions.flush();
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  /**
   * Finishes envelopes left finished-but-not-cleaned for longer than `graceMs` (a crash, a store outage,
   * or finishSoon() past its waiting list); returns how many. Each batch is finished at once, so that its
   * payloads go in one deletion call.
   */
  async sweep(graceMs: number, batch = DELETE_MANY_MAX): Promise<number> {
    const { queue, logger } = this.deps;
    let finished = 0;
    let failed = 0;
    let firstError: unknown;
    for (;;) {
      const leftovers = await queue.claimUnfinished(batch, graceMs);
      // Those without a bounce at once, so that their payloads go in one call; a bounce (a new message:
      // a read, a put and an insert) one at a time, as rare as it is here.
      const outcomes = await Promise.allSettled(leftovers.filter((e) => !needsBounce(e)).map((e) => this.finish(e)));
      for (const envelope of leftovers.filter(needsBounce)) {
        outcomes.push(...(await Promise.allSettled([this.finish(envelope)])));
      }
      for (const outcome of outcomes) {
        if (outcome.status === 'fulfilled') finished++;
        else if (failed++ === 0) firstError = outcome.reason;
      }
      if (leftovers.length < batch) break;
    }
    // One line per sweep, not per envelope: during a store outage a sweep fails for every one of them.
    if (failed > 0) logger.warn({ err: firstError, failed }, 'could not finish envelopes; will try again');
    if (finished > 0) logger.info({ finished }, 'the retention sweep finished envelopes whose clean-up was left over');
    return finished;
  }

  private async bounce(envelope: Envelope): Promise<void> {
    if (envelope.is_bounce) return this.notice(envelope);
    const { queue, intake, metrics, logger } = this.deps;
    const early = bounceRefusal(envelope, undefined);
    if (early) return void logger.info({ envelopeId: envelope.id, reason: early }, 'no bounce');
    if (await queue.hasStatus(envelope.id, 'bounced')) return;
    const originalHeaders = await this.headersOf(envelope);
    const refusal = bounceRefusal(envelope, originalHeaders);
    if (refusal) {
      logger.info({ envelopeId: envelope.id, reason: refusal }, 'no bounce');
      return;
    }
    const raw = await composeBounce({
      reportingMta: this.deps.reportingMta,
      from: this.deps.notifyFrom,
      envelope,
      report: envelope.bounce_report!,
      originalHeaders,
    });
    const accepted = await intake.accept({
      channel: 'smtp',
      sender: '',
      recipients: [envelope.sender],
      payload: raw,
      isBounce: true,
      ...reportParameters(raw, envelope.sender),
    });
    await queue.recordStatus(envelope.id, 'bounced', `bounce ${accepted.envelopeId} queued to <${envelope.sender}>`);
    metrics.bounces.inc();
    logger.info({ envelopeId: envelope.id, bounceId: accepted.envelopeId, to: envelope.sender }, 'bounce queued');
  }

  /**
   * A bounce of ours that failed for good (a double bounce) goes to the postmaster, BOUNCE_NOTICE_RECIPIENT,
   * as a report of its own from `<>`, so that it never ends only in the log (Postfix's
   * 2bounce_notice_recipient). A notice that fails in turn is logged and counted, never noticed again: it is
   * known by its header (NOTICE_HEADER), or, its payload unreadable, by going to the notice recipient.
   */
  private async notice(envelope: Envelope): Promise<void> {
    const { queue, intake, metrics, logger, noticeRecipient } = this.deps;
    if (await queue.hasStatus(envelope.id, 'bounced')) return;
    const bounceHeaders = await this.headersOf(envelope);
    const report = envelope.bounce_report!;
    const failed = report.recipients.map((r) => `<${r.recipient}>: ${r.diagnostic ?? r.status}`);
    const toPostmaster = envelope.recipients.some((r) => r.toLowerCase() === noticeRecipient.toLowerCase());
    if (isNotice(bounceHeaders) || toPostmaster) {
      metrics.bounceNotices.inc({ outcome: 'dropped' });
      logger.warn(
        { envelopeId: envelope.id, to: envelope.recipients, failed },
        'a report to the postmaster could not be delivered; dropped (it is never returned again)',
      );
      return;
    }
    const raw = await composeBounce({
      reportingMta: this.deps.reportingMta,
      from: this.deps.notifyFrom,
      envelope,
      report,
      originalHeaders: bounceHeaders,
      noticeTo: noticeRecipient,
    });
    const accepted = await intake.accept({
      channel: 'smtp',
      sender: '',
      recipients: [noticeRecipient],
      payload: raw,
      isBounce: true,
      ...reportParameters(raw, noticeRecipient),
    });
    await queue.recordStatus(envelope.id, 'bounced', `notice ${accepted.envelopeId} queued to <${noticeRecipient}>`);
    metrics.bounceNotices.inc({ outcome: 'queued' });
    logger.warn(
      { envelopeId: envelope.id, noticeId: accepted.envelopeId, to: noticeRecipient, failed },
      'a bounce could not be delivered; a notice is queued to the postmaster',
    );
  }

  /** The header block of an envelope's payload; undefined when the payload is gone. */
  private async headersOf(envelope: Envelope): Promise<Buffer | undefined> {
    return this.deps.objects
      .get(envelope.payload_key)
      .then((stream) => readHeaderBlock(stream))
      .catch((error: unknown) => {
        // The payload is needed only for the headers part; a report without it still tells its reader.
        if (error instanceof ObjectNotFoundError) return undefined;
        throw error;
      });
  }
}
