import { durationToMs } from '../../kernel/duration.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ClusterClient } from '../clusters/client.ts';
import { timeoutMs } from '../clusters/config.ts';
import type { SealedStore } from './store.ts';

const BATCH = 50;
const MAX_DELAY_MS = 60 * 60 * 1000;

/**
 * Retries failed pins (a cluster that was down or refused while a message was sealed). Runs at start
 * and then every SEAL_REPIN_INTERVAL; a pin that fails again waits twice as long as before, up to an
 * hour. Only pins on clusters of the configuration in force are tried: a cluster dropped from the
 * configuration keeps its failed record as history. Several instances share the work (claimDuePins).
 */
export class RepinJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly intervalMs: number;

  constructor(
    private readonly deps: { store: SealedStore; clusters: ClusterClient[]; interval: bigint; logger: Logger },
  ) {
    this.intervalMs = Math.max(1, Math.min(durationToMs(deps.interval), 2_147_483_647));
  }

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delay: number) {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .then(() => undefined)
        .catch((error: unknown) => this.deps.logger.error({ err: error }, 're-pin pass failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.intervalMs);
        });
    }, delay);
    this.timer.unref();
  }

  /** One pass: every due pin on a cluster in force is tried once. Returns how many were pinned. */
  async runOnce(): Promise<number> {
    const { store, clusters, logger } = this.deps;
    const byName = new Map(clusters.map((cluster) => [cluster.name, cluster]));
    let pinned = 0;
    for (let pass = 0; pass < 100 && !this.stopped; pass++) {
      // The lease outlasts the slowest possible attempt, so a live instance never loses its claim.
      const lease = new Date(Date.now() + Math.max(...clusters.map((cluster) => timeoutMs(cluster.settings))) + 60_000);
      const due = await store.claimDuePins([...byName.keys()], BATCH, lease);
      if (due.length === 0) break;
      await Promise.all(
        due.map(async (pin) => {
          const cluster = byName.get(pin.cluster)!;
          try {
            await cluster.pin(pin.cid);
            await store.recordPinAttempt(pin, { ok: true });
            pinned++;
            logger.info({ sealedId: pin.sealedId, cluster: pin.cluster, cid: pin.cid, attempts: pin.attempts + 1 }, 'failed pin retried: pinned');
          } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            const delay = Math.min(this.intervalMs * 2 ** Math.min(pin.attempts, 30), MAX_DELAY_MS);
            await store.recordPinAttempt(pin, { ok: false, error: message, nextAttemptAt: new Date(Date.now() + delay) });
            logger.warn({ sealedId: pin.sealedId, cluster: pin.cluster, cid: pin.cid, attempts: pin.attempts + 1, err: message }, 'failed pin retried: failed again');
          }
        }),
      );
      if (due.length < BATCH) break;
    }
    return pinned;
  }
}
