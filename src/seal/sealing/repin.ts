import { Gauge, type Registry } from 'prom-client';
import { cachedFor } from '../../kernel/metrics.ts';
import type { Clock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ClusterClient, PinState } from '../clusters/client.ts';
import { timeoutMs } from '../clusters/config.ts';
import { retryDelayMs, timerMs } from '../clusters/retry-delay.ts';
import type { ClaimedPin, SealedStore } from './store.ts';

const BATCH = 50;

export interface PinFollowerOptions {
  store: SealedStore;
  clusters: ClusterClient[];
  /** SEAL_REPIN_INTERVAL: first delay before a pin in error is pinned again (then doubling up to 1h). */
  repinIntervalMs: number;
  /** SEAL_PIN_CHECK_INTERVAL: how often a pin the cluster accepted but does not hold yet is looked at. */
  checkIntervalMs: number;
  /** SEAL_PIN_DEADLINE: a seal not pinned everywhere this long after sealing is reported as an error. */
  deadlineMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Follows every pin until its cluster holds it. A 200 to POST /pins means the cluster accepted the
 * pin; its IPFS daemon pins later and may fail (`pin_error`, e.g. a secondary whose daemon cannot fetch
 * the blocks). Each pass takes the due pins of the clusters in force:
 * - `pinning`: asks GET /pins/{cid} again; held → `pinned`, still on its way → look again after
 *   SEAL_PIN_CHECK_INTERVAL, failed → `pin_error`;
 * - `pin_error`: pins again (POST /pins, which also puts back a pin the cluster lost) and, when the
 *   cluster still reports the error, asks it to recover the pin (POST /pins/{cid}/recover); a pin that
 *   fails again waits twice as long as before, from SEAL_REPIN_INTERVAL up to an hour.
 * Seals not pinned everywhere SEAL_PIN_DEADLINE after sealing are logged as errors, once per pin.
 * Pins on clusters no longer in force keep their record as history. Several instances share the work.
 */
export class PinFollower {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly watching = new Set<Promise<void>>();
  private stopped = false;
  private readonly repinMs: number;
  private readonly checkMs: number;
  private readonly deadlineMs: number;

  constructor(private readonly options: PinFollowerOptions) {
    this.repinMs = timerMs(options.repinIntervalMs);
    this.checkMs = timerMs(options.checkIntervalMs);
    this.deadlineMs = options.deadlineMs;
  }

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await Promise.allSettled([...this.watching]);
  }

  /**
   * Follows the `pinning` pins of a seal this instance just made closely, in this process: GET
   * /pins/{cid} every 50 ms for the first second, then half as long again each time up to
   * SEAL_PIN_CHECK_INTERVAL, for one interval. A secondary
   * usually holds a small message within a few hundred milliseconds, and the periodic pass would only
   * see it at its next tick; what is still pinning after the window is left to that pass, which also
   * takes over the pins of an instance that stopped.
   */
  watch(pins: ClaimedPin[]): void {
    const byName = new Map(this.options.clusters.map((cluster) => [cluster.name, cluster]));
    for (const pin of pins) {
      const cluster = byName.get(pin.cluster);
      if (!cluster || pin.status !== 'pinning' || this.stopped) continue;
      const task = this.watchOne(cluster, pin)
        .catch((error: unknown) =>
          this.options.logger.warn(
            { sealedId: pin.sealedId, cluster: pin.cluster, err: error },
            'watching a fresh pin failed; the periodic pass follows it',
          ),
        )
        .finally(() => this.watching.delete(task));
      this.watching.add(task);
    }
  }

  private async watchOne(cluster: ClusterClient, pin: ClaimedPin): Promise<void> {
    const started = Date.now();
    const until = started + this.checkMs;
    const next = (delay: number) =>
      Date.now() - started < 1000 ? 50 : Math.min(Math.round(delay * 1.5), this.checkMs);
    for (let delay = 50; !this.stopped && Date.now() + delay <= until; delay = next(delay)) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      const state = await cluster.pinStatus(pin.cid).catch(() => undefined);
      if (state && state.state !== 'pinning') {
        await this.record(pin, state, false);
        return;
      }
    }
  }

  /**
   * Seals by pin state and cluster for /metrics, read at scrape time: one grouped query over the pins
   * not held (a partial index keeps it small however many seals are pinned), cached for a few seconds
   * so that frequent scrapes do not load the database.
   */
  registerMetrics(registry: Registry): void {
    const rows = cachedFor(() => this.options.store.openPinCounts());
    const clusters = this.options.clusters.map((cluster) => cluster.name);
    new Gauge({
      name: 'seal_pins_open',
      help:
        'Pins of sealed messages not held yet, by cluster and state ' +
        '(pinning: accepted, IPFS still pinning; pin_error: failed, retried)',
      labelNames: ['cluster', 'state'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const cluster of clusters) for (const state of ['pinning', 'pin_error']) this.set({ cluster, state }, 0);
        for (const row of await rows()) this.set({ cluster: row.cluster, state: row.status }, row.count);
      },
    });
    new Gauge({
      name: 'seal_pins_overdue',
      help: 'Pins of sealed messages still not held SEAL_PIN_DEADLINE after sealing, by cluster',
      labelNames: ['cluster'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const cluster of clusters) this.set({ cluster }, 0);
        const overdue = new Map<string, number>();
        for (const row of await rows()) overdue.set(row.cluster, (overdue.get(row.cluster) ?? 0) + row.overdue);
        for (const [cluster, count] of overdue) this.set({ cluster }, count);
      },
    });
  }

  private schedule(delay: number) {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .then(() => undefined)
        .catch((error: unknown) => this.options.logger.error({ err: error }, 'pin follow-up pass failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule(Math.min(this.checkMs, this.repinMs));
        });
    }, delay);
    this.timer.unref();
  }

  /** One pass over the due pins, then the deadline check. Returns how many pins became `pinned`. */
  async runOnce(): Promise<number> {
    const { store, clusters } = this.options;
    const byName = new Map(clusters.map((cluster) => [cluster.name, cluster]));
    let pinned = 0;
    for (let pass = 0; pass < 100 && !this.stopped; pass++) {
      // The lease outlasts the slowest possible round (pin, status, recover, status), so a live
      // instance never loses its claim.
      const lease = new Date(
        this.options.clock.now() + 4 * Math.max(...clusters.map((cluster) => timeoutMs(cluster.settings))) + 60_000,
      );
      const due = await store.claimDuePins([...byName.keys()], BATCH, lease);
      if (due.length === 0) break;
      const outcomes = await Promise.all(due.map((pin) => this.follow(byName.get(pin.cluster)!, pin)));
      pinned += outcomes.filter((state) => state === 'pinned').length;
      if (due.length < BATCH) break;
    }
    await this.reportOverdue();
    return pinned;
  }

  private async follow(cluster: ClusterClient, pin: ClaimedPin): Promise<PinState['state']> {
    const repinning = pin.status === 'pin_error';
    let state: PinState;
    try {
      if (repinning) {
        await cluster.pin(pin.cid, pin.sealedId);
        state = await cluster.pinStatus(pin.cid);
        if (state.state === 'pin_error') {
          await cluster.recover(pin.cid);
          state = await cluster.pinStatus(pin.cid);
        }
      } else {
        state = await cluster.pinStatus(pin.cid);
      }
    } catch (error) {
      state = { state: 'pin_error', error: error instanceof Error ? error.message : String(error) };
    }
    await this.record(pin, state, repinning);
    return state.state;
  }

  /** Writes where a pin stands, with the next look for one not held yet. */
  private async record(pin: ClaimedPin, state: PinState, repinning: boolean): Promise<void> {
    const { store, logger } = this.options;
    const context = { sealedId: pin.sealedId, cluster: pin.cluster, cid: pin.cid };
    const attempts = pin.attempts + (repinning ? 1 : 0);
    if (state.state === 'pin_error') {
      const delay = retryDelayMs(this.repinMs, attempts);
      await store.recordPinState(pin, {
        status: 'pin_error',
        error: state.error,
        nextAttemptAt: new Date(this.options.clock.now() + delay),
        attempted: repinning,
      });
      logger.warn(
        { ...context, attempts, err: state.error },
        repinning ? 'pin retried: failed again' : 'pin failed in IPFS; it will be retried',
      );
    } else if (state.state === 'pinning') {
      await store.recordPinState(pin, {
        status: 'pinning',
        nextAttemptAt: new Date(this.options.clock.now() + this.checkMs),
        attempted: repinning,
      });
    } else {
      await store.recordPinState(pin, { status: 'pinned', attempted: repinning });
      logger.info({ ...context, attempts }, 'pin held by the cluster');
    }
  }

  private async reportOverdue(): Promise<void> {
    const overdue = await this.options.store.markOverdue(new Date(this.options.clock.now() - this.deadlineMs));
    for (const pin of overdue) {
      this.options.logger.error(
        { sealedId: pin.sealedId, cluster: pin.cluster, status: pin.status, err: pin.error ?? undefined },
        'sealed message not pinned on every cluster within SEAL_PIN_DEADLINE',
      );
    }
  }
}
