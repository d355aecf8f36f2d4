import { PeriodicPass } from '../../kernel/periodic-pass.ts';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import { cachedFor } from '../../kernel/metrics.ts';
import type { ClusterClient } from '../clusters/client.ts';
import { timeoutMs } from '../clusters/config.ts';
import { retryDelayMs, timerMs } from '../clusters/retry-delay.ts';
import type { ClaimedEndWork, EndStore } from './end-store.ts';

const EXPIRE_BATCH = 100;
const WORK_BATCH = 50;

export interface SealEnderOptions {
  store: EndStore;
  /** The clusters in force: every one is asked to unpin an ended message's CID. */
  clusters: ClusterClient[];
  /** SEAL_END_INTERVAL: how often the pass runs, and the first delay before a failed unpin is tried again. */
  intervalMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Ends sealed messages (docs/specification.md#end-dates). Each pass, every SEAL_END_INTERVAL and at once after a
 * withdrawal:
 * - ends the messages whose end date has passed: the end recorded as of that date and the key destroyed in one
 *   statement per batch (reads already answer 410 from the moment it passed; this makes the content gone);
 * - asks each cluster in force to unpin the CIDs of ended messages (seal_end_work): a row is deleted once the
 *   cluster confirmed or had no such pin; a failure is tried again after SEAL_END_INTERVAL, doubling up to 1h.
 * All state is in the database: a restart resumes where it stopped, and instances share the work (SKIP LOCKED),
 * so a message is ended, and counted, once.
 */
export class SealEnder {
  private readonly intervalMs: number;
  private readonly pass = new PeriodicPass({
    run: () => this.runOnce(),
    nextDelayMs: () => this.intervalMs,
    onError: (error) => this.options.logger.error({ err: error }, 'end pass failed'),
  });
  private readonly metrics = {
    expired: new Counter({
      name: 'sealed_messages_expired_total',
      help: 'Sealed messages ended by their end date (key destroyed, unpin queued)',
      registers: [],
    }),
    withdrawn: new Counter({
      name: 'sealed_messages_withdrawn_total',
      help: 'Sealed messages withdrawn, for everyone (key destroyed, unpin queued) or for one recipient',
      labelNames: ['scope'] as const,
      registers: [],
    }),
    unpinFailures: new Counter({
      name: 'seal_unpin_failures_total',
      help: 'Unpins of ended messages a cluster failed (tried again, doubling up to 1h), by cluster',
      labelNames: ['cluster'] as const,
      registers: [],
    }),
  };

  constructor(private readonly options: SealEnderOptions) {
    this.intervalMs = timerMs(options.intervalMs);
    this.metrics.withdrawn.inc({ scope: 'everyone' }, 0);
    this.metrics.withdrawn.inc({ scope: 'recipient' }, 0);
    for (const cluster of options.clusters) this.metrics.unpinFailures.inc({ cluster: cluster.name }, 0);
  }

  registerMetrics(registry: Registry): void {
    registry.registerMetric(this.metrics.expired);
    registry.registerMetric(this.metrics.withdrawn);
    registry.registerMetric(this.metrics.unpinFailures);
    const waiting = cachedFor(() => this.options.store.waiting());
    new Gauge({
      name: 'seal_end_work_waiting',
      help: 'Unpins of ended sealed messages not confirmed by their cluster yet',
      registers: [registry],
      async collect() {
        this.set(await waiting());
      },
    });
  }

  start(): void {
    this.pass.start();
  }

  stop(): Promise<void> {
    return this.pass.stop();
  }

  /**
   * Withdraws a message, for everyone (the key destroyed, the unpins queued and started at once) or for one
   * recipient (lower-cased address). False when there was nothing to do: already ended, or already withdrawn
   * for that recipient.
   */
  async withdraw(id: string, reason: string, recipientKey?: string): Promise<boolean> {
    const { store, clusters, logger } = this.options;
    if (recipientKey !== undefined) {
      const withdrawn = await store.withdrawForRecipient(id, recipientKey, reason);
      if (withdrawn) {
        this.metrics.withdrawn.inc({ scope: 'recipient' });
        logger.info({ sealedId: id }, 'sealed message withdrawn for one recipient');
      }
      return withdrawn;
    }
    const withdrawn = await store.withdraw(
      id,
      reason,
      clusters.map((cluster) => cluster.name),
    );
    if (withdrawn) {
      this.metrics.withdrawn.inc({ scope: 'everyone' });
      logger.info({ sealedId: id }, 'sealed message withdrawn for everyone: key destroyed, unpin queued');
      this.wake();
    }
    return withdrawn;
  }

  /** Runs a pass soon (now when idle, right after the current one otherwise). */
  wake(): void {
    this.pass.wake();
  }

  /** One pass: the messages past their end date ended, then the due unpins. Returns how many ended. */
  async runOnce(): Promise<{ expired: number; unpinned: number }> {
    const { store, clusters, logger } = this.options;
    const names = clusters.map((cluster) => cluster.name);
    let expired = 0;
    for (let batch = 0; batch < 100 && !this.pass.stopped; batch++) {
      const ended = await store.expireDue(names, EXPIRE_BATCH);
      expired += ended.length;
      this.metrics.expired.inc(ended.length);
      for (const message of ended) {
        logger.info({ sealedId: message.id, cid: message.cid }, 'sealed message expired: key destroyed, unpin queued');
      }
      if (ended.length < EXPIRE_BATCH) break;
    }
    const byName = new Map(clusters.map((cluster) => [cluster.name, cluster]));
    let unpinned = 0;
    for (let batch = 0; batch < 100 && !this.pass.stopped; batch++) {
      // The lease outlasts the slowest unpin, so a live instance never loses its claim.
      const lease = new Date(
        this.options.clock.now() + 2 * Math.max(...clusters.map((cluster) => timeoutMs(cluster.settings))) + 60_000,
      );
      const due = await store.claimWork(names, WORK_BATCH, lease);
      const done = await Promise.all(due.map((work) => this.unpin(byName.get(work.cluster)!, work)));
      unpinned += done.filter(Boolean).length;
      if (due.length < WORK_BATCH) break;
    }
    return { expired, unpinned };
  }

  private async unpin(cluster: ClusterClient, work: ClaimedEndWork): Promise<boolean> {
    const { store, logger, clock } = this.options;
    const context = { sealedId: work.sealedId, cluster: work.cluster, cid: work.cid, attempts: work.attempts };
    try {
      await cluster.unpin(work.cid);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const delay = retryDelayMs(this.intervalMs, work.attempts);
      this.metrics.unpinFailures.inc({ cluster: work.cluster });
      await store.workFailed(work, message, new Date(clock.now() + delay));
      logger.warn({ ...context, err: message }, 'unpinning an ended message failed; it will be retried');
      return false;
    }
    await store.workDone(work);
    logger.info(context, 'ended message unpinned on this cluster');
    return true;
  }
}
