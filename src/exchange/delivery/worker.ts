import type { Logger } from '../../kernel/logger.ts';
import { every } from './periodic.ts';
import type { Claim, EnvelopeQueue } from './queue.ts';
import type { EnvelopeFinisher } from './retention.ts';

export interface DeliveryOptions {
  queue: EnvelopeQueue;
  finisher: EnvelopeFinisher;
  /** One delivery attempt; must not throw for delivery problems (deliverClaim). */
  deliver: (claim: Claim) => Promise<void>;
  /** DELIVERY_CONCURRENCY: envelopes in delivery at once in this instance. */
  concurrency: number;
  /**
   * Whether this instance's intake had traffic a moment ago: delivery then keeps to a share of its
   * slots (INTAKE_BUSY_SHARE), so that taking mail in, which a sender waits for, comes first.
   */
  intakeBusy?: () => boolean;
  /** How long delivery gathers mail between claims while the intake is busy (default INTAKE_BUSY_CLAIM_GAP_MS). */
  busyClaimGapMs?: number;
  /** DELIVERY_POLL_INTERVAL: how long an idle instance waits before looking for due envelopes again. */
  pollIntervalMs: number;
  /** DELIVERY_LEASE: how long a claim lasts without renewal. */
  leaseMs: number;
  logger: Logger;
}

export interface DeliveryWorkers {
  /** Envelopes in delivery right now. */
  readonly inFlight: number;
  /**
   * New mail is due: an idle loop claims at once instead of at its next poll. Wakes that arrive while
   * a claim is running make one more claim after it, so a burst of accepted messages costs a few
   * claims, not one each.
   */
  wake(): void;
  /** Stops claiming and waits for the deliveries in flight. */
  stop(): Promise<void>;
}

/**
 * The share of DELIVERY_CONCURRENCY delivery keeps to while the intake is busy. A quarter of the default
 * 32 slots still delivers several hundred messages a second at 10–20 ms per delivery, more than the
 * intake takes in on two cores, so the queue does not grow; what it saves is CPU for the intake.
 */
export const INTAKE_BUSY_SHARE = 0.25;

/**
 * While the intake is busy, delivery claims at most once per this many milliseconds, unless the mail
 * accepted since its last claim already fills its free slots. Taken one by one, each accepted message
 * cost a claim and a `delivered` mark of its own (two statements per message at 8 connections); gathered,
 * they go in groups, and what PostgreSQL and the instance save goes to the intake (bench/RESULTS.md,
 * "Delivery gathers its claims while the intake is busy"). The delay is at most this, once per group.
 */
export const INTAKE_BUSY_CLAIM_GAP_MS = 50;

/**
 * The delivery workers of one engine instance: a single claim loop keeps up to `concurrency`
 * deliveries running. It claims as many due envelopes as there are free slots; a full batch means more
 * may be due, so it claims again as soon as a slot frees; a short batch means the queue is drained for
 * now, so it sleeps for the poll interval, or until this instance accepts a message (wake()). While the
 * intake is busy it keeps to INTAKE_BUSY_SHARE of the slots and gathers the mail taken in between claims
 * (INTAKE_BUSY_CLAIM_GAP_MS), unless a backlog or the accepted mail already fills the free slots.
 *
 * While deliveries run, their leases are renewed every third of the lease, so a slow relay or a large
 * message never lets a lease run out under a live worker; only a dead worker's envelopes are taken over.
 * Envelopes whose clean-up was interrupted are finished by a sweep once per lease period.
 */
export function startDelivery(options: DeliveryOptions): DeliveryWorkers {
  const { queue, finisher, logger, concurrency } = options;
  const busyConcurrency = Math.max(1, Math.ceil(concurrency * INTAKE_BUSY_SHARE));
  const inFlight = new Map<string, Claim>();
  /** In-flight claims another worker has taken over: no longer renewed, and reported once. */
  const takenOver = new Set<string>();
  const slotFreed = new Signal();
  const woken = new Signal();
  let stopping = false;
  let claimFailing = false;
  const intakeBusy = () => options.intakeBusy?.() ?? false;
  /** Slots not delivering, of those delivery may use now. */
  const freeSlots = (busy: boolean) => (busy ? busyConcurrency : concurrency) - inFlight.size;

  const run = (claim: Claim) => {
    inFlight.set(claim.id, claim);
    options
      .deliver(claim)
      .catch((error: unknown) =>
        logger.error(
          { err: error, envelopeId: claim.id },
          'delivery attempt broke off; the envelope is retried when its lease runs out',
        ),
      )
      .finally(() => {
        inFlight.delete(claim.id);
        takenOver.delete(claim.id);
        slotFreed.notify();
      });
  };

  const gapMs = options.busyClaimGapMs ?? INTAKE_BUSY_CLAIM_GAP_MS;
  let lastClaimAt = Number.NEGATIVE_INFINITY;
  /** wake()s since the last claim: mail this instance took (or bounces it wrote) that is due, at least. */
  let wokenSinceClaim = 0;
  /** The last claim filled every slot it asked for: more is due, so no gathering until it is drained. */
  let backlog = false;

  const loop = (async () => {
    while (!stopping) {
      const busy = intakeBusy();
      const free = freeSlots(busy);
      if (free > 0 && busy && !backlog && wokenSinceClaim < free) {
        const gather = lastClaimAt + gapMs - performance.now();
        if (gather > 0) {
          // Each wake() ends the wait early, to look again whether the slots are full yet.
          await woken.wait(gather);
          continue;
        }
      }
      if (free <= 0) {
        await slotFreed.wait();
        // Deliveries finish in groups (their final writes are batched): let the whole group free its
        // slots, then claim for all of them in one statement rather than one claim per slot.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      let claims: Claim[];
      lastClaimAt = performance.now();
      wokenSinceClaim = 0;
      try {
        claims = await queue.claimDue(free);
        if (claimFailing) logger.info('delivery queue reachable again');
        claimFailing = false;
      } catch (error) {
        if (!claimFailing)
          logger.error(
            { err: error },
            'cannot claim envelopes from the delivery queue; trying again every poll interval',
          );
        claimFailing = true;
        if (!stopping) await woken.wait(options.pollIntervalMs);
        continue;
      }
      backlog = claims.length === free;
      for (const claim of claims) run(claim);
      // stop() may have come during the claim, its notify() with no one waiting yet.
      if (claims.length < free && wokenSinceClaim === 0 && !stopping) await woken.wait(options.pollIntervalMs);
    }
  })();

  const leaseRenewal = every(Math.max(1, Math.floor(options.leaseMs / 3)), async () => {
    try {
      const lost = await queue.renewLeases([...inFlight.values()].filter((claim) => !takenOver.has(claim.id)));
      for (const id of lost) {
        // Said once: the delivery itself learns it at its next fenced write and changes nothing.
        takenOver.add(id);
        logger.warn({ envelopeId: id }, 'lease lost: another worker has taken the envelope over');
      }
    } catch (error) {
      logger.warn({ err: error }, 'could not renew delivery leases');
    }
  });
  const sweep = every(
    options.leaseMs,
    async () => {
      try {
        await finisher.sweep(options.leaseMs);
      } catch (error) {
        logger.warn({ err: error }, 'retention sweep failed; will try again');
      }
    },
    { runFirstAfterMs: Math.min(options.leaseMs, 5_000) },
  );

  logger.info(
    { concurrency, pollIntervalMs: options.pollIntervalMs, leaseMs: options.leaseMs },
    'delivery workers started',
  );
  return {
    get inFlight() {
      return inFlight.size;
    },
    wake() {
      wokenSinceClaim++;
      woken.notify();
    },
    async stop() {
      stopping = true;
      woken.notify();
      slotFreed.notify();
      await loop;
      await sweep.stop();
      while (inFlight.size > 0) await slotFreed.wait();
      await leaseRenewal.stop();
      logger.info('delivery workers stopped');
    },
  };
}

/** Something to wait for: notify() releases every waiter; a wait with a timeout also ends by itself. */
class Signal {
  private waiters = new Set<() => void>();

  notify(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const release of waiting) release();
  }

  wait(timeoutMs?: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const release = () => {
        clearTimeout(timer);
        this.waiters.delete(release);
        resolve();
      };
      this.waiters.add(release);
      if (timeoutMs !== undefined) timer = setTimeout(release, timeoutMs);
    });
  }
}
