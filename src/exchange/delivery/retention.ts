import type { DkimSigner } from '../../kernel/dkim.ts';
import type { Logger } from '../../kernel/logger.ts';
import { Batcher } from '../../kernel/batcher.ts';
import { DELETE_MANY_MAX, ObjectNotFoundError, type ObjectStore } from '../../kernel/objects/index.ts';
import type { MessageIntake } from '../inbound/accept.ts';
import type { ExchangeMetrics } from '../metrics.ts';
import type { Envelope } from '../tables.ts';
import { readHeaderBlock } from '../outbound/header-block.ts';
import { bounceRefusal, composeBounce } from './bounce.ts';
import type { EnvelopeQueue } from './queue.ts';

export interface FinisherDeps {
  queue: EnvelopeQueue;
  objects: ObjectStore;
  intake: Pick<MessageIntake, 'accept'>;
  metrics: ExchangeMetrics;
  logger: Logger;
  /** SMTP_HOSTNAME, the bounce's Reporting-MTA. */
  reportingMta: string;
  /** NOTIFY_FROM, the bounce's From header. */
  notifyFrom: string;
  /** Signs the bounce as it is written (DKIM_*), so that the relay hop carries it signed. */
  dkim?: DkimSigner;
  /** Whether the intake is busy (MessageIntake.recentlyBusy): payload deletions then wait, see below. */
  intakeBusy?: () => boolean;
}

/** Whether a finished envelope's report calls for a bounce. */
const needsBounce = (envelope: Envelope) => (envelope.bounce_report?.recipients.length ?? 0) > 0;

/** The longest a payload deletion waits for the intake to go quiet. */
export const DELETION_HOLD_MAX_MS = 5000;

/**
 * What happens to an envelope once it is `delivered` or `failed` (docs/specification.md#retention, rules 1
 * and 2): the bounce, if its report calls for one, then the payload is deleted from the object store and the
 * envelope row from the database; the status history stays.
 *
 * Each step can be repeated safely, so an envelope whose finishing was cut short (a crash, an
 * object-store outage) is finished later by sweep(): the payload goes before the row, so a row is
 * never missing while its payload remains, and a `bounced` history row records that the bounce was
 * queued. A crash between queueing the bounce and writing that row can send the bounce twice; none
 * is ever lost.
 *
 * The bounce goes through MessageIntake as a new envelope (null sender, is_bounce, routed to smtp),
 * so it gets durable retries of its own, and, being a bounce, never bounces itself.
 */
export class EnvelopeFinisher {
  /** drain() was called: the instance is stopping, and deletions are no longer held. */
  private draining = false;
  /** Clean-ups started by finishSoon() and not done yet. */
  private readonly pending = new Set<Promise<void>>();
  /** Clean-ups finishSoon() has left to sweep() since it last started one (see finishSoon). */
  private deferred = 0;
  /**
   * Payload deletions of envelopes finished at about the same time go out together: one DeleteObjects call
   * for up to 1,000 keys on S3 instead of a DELETE each (a store round trip per delivered message saved).
   * While the intake is busy they wait (up to 1,000 keys or DELETION_HOLD_MAX_MS): a deletion promises no
   * one anything, and at one connection each delivered message would otherwise cost the store (and this
   * process) a call of its own at the moment the intake needs them (docs/design.md#delivery).
   */
  private readonly deletions: Batcher<string, undefined>;

  constructor(private readonly deps: FinisherDeps) {
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

  async finish(envelope: Envelope): Promise<void> {
    if (needsBounce(envelope)) await this.bounce(envelope);
    await this.deletions.submit(envelope.payload_key);
    await this.deps.queue.remove(envelope.id);
  }

  /**
   * Starts finish() and returns before it is done, so that a delivery worker can take the next message
   * while the payload and row of the last one are deleted (the status is already recorded). A failure
   * is logged and left to sweep().
   *
   * With `maxPending` clean-ups already under way, this one is not started: the row stays `delivered` or
   * `failed`, and sweep() finishes it within two DELIVERY_LEASE periods. A store that cannot take the
   * deletions as fast as the deliveries (while the intake's puts keep it busy) then delays the deletions,
   * never the deliveries, and the memory held for clean-ups stays bounded; the deletion is late, not
   * lost, as after a crash. A bounce is never left for later.
   */
  finishSoon(envelope: Envelope, maxPending: number): void {
    const { logger } = this.deps;
    if (this.pending.size >= maxPending && !needsBounce(envelope)) {
      if (this.deferred++ === 0) {
        logger.info(
          { pending: this.pending.size },
          'payload deletions are behind the deliveries; the retention sweep will finish the envelopes past them',
        );
      }
      return;
    }
    if (this.deferred > 0) {
      logger.info({ leftToSweep: this.deferred }, 'payload deletions are keeping up with the deliveries again');
      this.deferred = 0;
    }
    const done = this.finish(envelope).catch((error: unknown) => {
      logger.warn(
        { err: error, envelopeId: envelope.id },
        'could not finish the envelope now; the retention sweep will',
      );
    });
    this.pending.add(done);
    void done.finally(() => this.pending.delete(done));
  }

  /** Waits for the clean-ups started by finishSoon() (at shutdown), holding no deletion back. */
  async drain(): Promise<void> {
    this.draining = true;
    this.deletions.flush();
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /**
   * Finishes envelopes left finished-but-not-cleaned for longer than `graceMs` (a crash, a store outage,
   * or finishSoon() past its limit); returns how many. Each batch is finished at once, so that its
   * payloads go in one deletion call.
   */
  async sweep(graceMs: number, batch = DELETE_MANY_MAX): Promise<number> {
    const { queue, logger } = this.deps;
    let finished = 0;
    let failed = 0;
    let firstError: unknown;
    for (;;) {
      const leftovers = await queue.claimUnfinished(batch, graceMs);
      for (const outcome of await Promise.allSettled(leftovers.map((envelope) => this.finish(envelope)))) {
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
    const { queue, objects, intake, metrics, logger } = this.deps;
    const early = bounceRefusal(envelope, undefined);
    if (early) return void logger.info({ envelopeId: envelope.id, reason: early }, 'no bounce');
    if (await queue.hasStatus(envelope.id, 'bounced')) return;
    const originalHeaders = await objects
      .get(envelope.payload_key)
      .then((stream) => readHeaderBlock(stream))
      .catch((error: unknown) => {
        // The payload is needed only for the headers part; a bounce without it still tells the sender.
        if (error instanceof ObjectNotFoundError) return undefined;
        throw error;
      });
    const refusal = bounceRefusal(envelope, originalHeaders);
    if (refusal) {
      logger.info({ envelopeId: envelope.id, reason: refusal }, 'no bounce');
      return;
    }
    const composed = await composeBounce({
      reportingMta: this.deps.reportingMta,
      from: this.deps.notifyFrom,
      envelope,
      report: envelope.bounce_report!,
      originalHeaders,
    });
    const raw = this.deps.dkim ? await this.deps.dkim.sign(composed) : composed;
    // Returned 8-bit header text makes the bounce 8-bit: the relay is told so (BODY=8BITMIME).
    const body8bitmime = raw.some((byte) => byte >= 0x80);
    const accepted = await intake.accept({
      channel: 'smtp',
      sender: '',
      recipients: [envelope.sender],
      payload: raw,
      isBounce: true,
      body8bitmime,
    });
    await queue.recordStatus(envelope.id, 'bounced', `bounce ${accepted.envelopeId} queued to <${envelope.sender}>`);
    metrics.bounces.inc();
    logger.info({ envelopeId: envelope.id, bounceId: accepted.envelopeId, to: envelope.sender }, 'bounce queued');
  }
}
