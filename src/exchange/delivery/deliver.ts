import { PassThrough } from 'node:stream';
import { formatDuration } from '../../kernel/duration.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import { RECENT_PAYLOAD_MAX, type RecentPayloads } from '../recent-payloads.ts';
import type { ExchangeMetrics } from '../metrics.ts';
import type { OutboundStrategyName } from '../outbound/strategy-names.ts';
import {
  DeliveryError,
  X_DIAGNOSTIC,
  type FailedRecipient,
  type OpenPayload,
  type OutboundStrategy,
} from '../outbound/types.ts';
import type { BounceReport } from '../tables.ts';
import { retryDelayMs } from './backoff.ts';
import type { Claim, EnvelopeQueue } from './queue.ts';
import type { EnvelopeFinisher } from './retention.ts';

export interface DeliverDeps {
  queue: EnvelopeQueue;
  objects: ObjectStore;
  /** Payloads this instance accepted and still holds: read from memory, not from the store. */
  recentPayloads?: RecentPayloads;
  /** This instance's outbound strategies, by name (createOutboundStrategies). */
  strategies: ReadonlyMap<string, OutboundStrategy>;
  finisher: EnvelopeFinisher;
  metrics: ExchangeMetrics;
  logger: Logger;
  retry: { maxRetries: number; baseMs: number; maxMs: number };
}

/**
 * One delivery attempt of a claimed envelope (docs/design.md#delivery): every outbound strategy not done yet, in
 * the rule's order. Then one of:
 * - all done: `delivered`, and the envelope is finished (payload and row deleted);
 * - a temporary failure with retries left: `retrying`, due again after the backoff delay;
 * - a permanent failure, or the retries used up: `failed`, bounced, finished.
 *
 * `delivered_messages_total{strategy}` and its size counterpart count each strategy when it completes,
 * so a message whose smtp copy went out but whose seal strategy failed for good is still counted for smtp.
 * Never throws for a delivery problem; a database error leaves the lease to run out, and the envelope
 * is then taken again.
 */
export async function deliverClaim(claim: Claim, deps: DeliverDeps): Promise<void> {
  const { queue, strategies, metrics, retry, logger } = deps;
  // Fields of every line about this attempt; no child logger, which would cost CPU per message for lines
  // that are mostly never written.
  const about = { envelopeId: claim.id, attempt: claim.attempts };
  const lost = () => logger.warn(about, LEASE_LOST);

  // Each claim counts as an attempt, crashes included, so a message that kills its worker every time
  // still ends (failed and bounced) instead of circulating for ever.
  if (claim.attempts > retry.maxRetries + 1) {
    const failure = new DeliveryError(
      false,
      `gave up after ${claim.attempts - 1} attempts, the last ones cut short by worker crashes`,
      {
        status: '4.4.7',
        diagnostic: `${X_DIAGNOSTIC}; delivery attempts were interrupted repeatedly`,
      },
    );
    return fail(claim, failure, claim.bounce_report?.recipients ?? [], deps);
  }

  const rejected: FailedRecipient[] = [...(claim.bounce_report?.recipients ?? [])];
  const details: string[] = claim.done_outbound.map((strategy) => `${strategy}: done in an earlier attempt`);
  const pending = claim.outbound.filter((p) => !claim.done_outbound.includes(p));
  const openPayload = claimPayload(claim, deps);
  for (const [i, strategy] of pending.entries()) {
    let result;
    try {
      result = await strategyFor(strategies, strategy).deliver(claim, openPayload);
    } catch (error) {
      const failure = asDeliveryError(error);
      if (failure.permanent || claim.attempts > retry.maxRetries) return fail(claim, failure, rejected, deps, strategy);
      const delay = retryDelayMs(claim.attempts, retry);
      const detail =
        `attempt ${claim.attempts} failed (${strategy}): ${failure.message}; ` +
        `retry ${claim.attempts} of ${retry.maxRetries} in ${formatDuration(BigInt(delay) * 1_000_000n)}`;
      if (!(await queue.markRetrying(claim, delay, failure.message, detail))) return lost();
      logger.info({ ...about, strategy, err: failure.message, retryInMs: delay }, 'delivery failed; will retry');
      return;
    }
    rejected.push(...(result?.rejected ?? []));
    metrics.delivered.inc({ strategy });
    metrics.deliveredBytes.inc({ strategy }, claim.size);
    details.push(`${strategy}: ${result?.detail ?? 'done'}`);
    // Progress is recorded between strategies only; the last one is recorded with the status (one write less).
    const last = i === pending.length - 1;
    if (!last && !(await queue.markStrategyDone(claim, strategy, report(rejected, 'Some recipients were refused.'))))
      return lost();
  }

  const finalReport = report(rejected, 'Some recipients were refused; the others received the message.');
  const refusedNote = rejected.length > 0 ? `; refused: ${rejected.map((r) => r.recipient).join(', ')}` : '';
  if (!(await queue.markDelivered(claim, `${details.join('; ')}${refusedNote}`, finalReport))) return lost();
  // Debug, not info: the status history and delivered_messages_total have every delivery, and a line per
  // message cost the intake beside it CPU (docs/decisions.md#delivery-logs).
  logger.debug({ ...about, outbound: claim.outbound, refused: rejected.length }, 'delivered');
  finish(claim, { bounce_report: finalReport }, deps, finalReport === null);
}

async function fail(
  claim: Claim,
  failure: DeliveryError,
  alreadyRejected: FailedRecipient[],
  deps: DeliverDeps,
  strategy?: OutboundStrategyName,
): Promise<void> {
  const about = { envelopeId: claim.id, attempt: claim.attempts };
  const exhausted = !failure.permanent;
  const status = exhausted ? '4.4.7' : failure.status;
  const failedHere =
    failure.recipients ??
    claim.recipients.map((recipient) => ({
      recipient,
      status,
      diagnostic: failure.diagnostic,
      remoteMta: failure.remoteMta,
    }));
  const known = new Set(alreadyRejected.map((r) => r.recipient));
  const recipients = [...alreadyRejected, ...failedHere.filter((r) => !known.has(r.recipient))];
  const reason = exhausted
    ? `Delivery was attempted ${claim.attempts} times over a period of time and did not succeed; ` +
      `the last error: ${failure.message}.`
    : `The message was refused${strategy ? ` (${strategy})` : ''}: ${failure.message}.`;
  const bounceReport: BounceReport = { reason, recipients };
  const outcome = exhausted ? `retries exhausted after attempt ${claim.attempts}` : 'permanent failure';
  const detail = `${outcome}${strategy ? ` (${strategy})` : ''}: ${failure.message}`;
  if (!(await deps.queue.markFailed(claim, detail, bounceReport))) {
    return void deps.logger.warn(about, LEASE_LOST);
  }
  deps.metrics.failed.inc();
  deps.logger.warn(
    { ...about, strategy, err: failure.message, permanent: failure.permanent },
    'delivery failed for good',
  );
  finish(claim, { status: 'failed', bounce_report: bounceReport }, deps);
}

/**
 * Bounce if called for, then delete payload and row — in the background (EnvelopeFinisher.finishSoon):
 * the outcome is recorded, so the worker's slot is free for the next message. An error here is left to
 * the retention sweep, or, where the `delivered` mark removed the row (`rowRemoved`), to the orphan sweep.
 */
function finish(claim: Claim, changes: Partial<Claim>, deps: DeliverDeps, rowRemoved = false): void {
  deps.recentPayloads?.forget(claim.id);
  deps.finisher.finishSoon({ ...claim, ...changes }, rowRemoved);
}

/**
 * The claim's payload for its strategies: the bytes this instance accepted when it still holds them,
 * else a small payload read whole from the store once for the attempt (one open and read rather than one
 * per look: the relay hop reads the header block before it sends), else a stream from the store per open.
 */
export function claimPayload(claim: Claim, deps: Pick<DeliverDeps, 'objects' | 'recentPayloads'>): OpenPayload {
  let whole: Promise<Buffer | undefined> | undefined;
  const bytes = () =>
    (whole ??= (async () => {
      const held = deps.recentPayloads?.get(claim.id);
      if (held) return held;
      if (claim.size > RECENT_PAYLOAD_MAX) return undefined;
      // Undefined for a payload larger than its envelope said: streamed after all, never held.
      return deps.objects.getBytes(claim.payload_key, RECENT_PAYLOAD_MAX);
    })());
  const open = async () => {
    const held = await bytes();
    return held ? new PassThrough().end(held) : deps.objects.get(claim.payload_key);
  };
  return Object.assign(open, { bytes });
}

const LEASE_LOST = 'lease lost while delivering: another worker has taken the envelope over';

const report = (rejected: FailedRecipient[], reason: string): BounceReport | null =>
  rejected.length > 0 ? { reason, recipients: rejected } : null;

/** Anything but a DeliveryError (the object store down, a bug in a strategy) is worth another try. */
function asDeliveryError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new DeliveryError(false, message, { diagnostic: `${X_DIAGNOSTIC}; ${message}`.slice(0, 900), cause: error });
}

/**
 * A rule may name a strategy this instance lacks: written by an instance of another build during a
 * rolling upgrade. Another instance may have it, and this one may be replaced by one that does: retried.
 */
function strategyFor(strategies: ReadonlyMap<string, OutboundStrategy>, name: string): OutboundStrategy {
  const strategy = strategies.get(name);
  if (!strategy)
    throw new DeliveryError(false, `this instance has no outbound strategy ${name}`, {
      diagnostic: `${X_DIAGNOSTIC}; no outbound strategy ${name}`,
    });
  return strategy;
}
