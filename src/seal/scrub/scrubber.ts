import { PeriodicPass } from '../../kernel/periodic-pass.ts';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import { cachedFor } from '../../kernel/metrics.ts';
import type { ClusterClient } from '../clusters/client.ts';
import { timeoutMs } from '../clusters/config.ts';
import { timerMs } from '../clusters/retry-delay.ts';
import type { Keyring } from '../crypto/keyring.ts';
import { messageKeyLabel } from '../crypto/secret-box.ts';
import { copyProblem, verifyCopy } from '../sealing/copies.ts';
import type { CopyFinding, ScrubStore, ScrubTarget } from './scrub-store.ts';

/** Messages claimed at a time; at SEAL_SCRUB_RATE per second a batch takes BATCH / rate seconds. */
const BATCH = 20;
/** The longest wait between two looks for due messages, whatever SEAL_SCRUB_INTERVAL. */
const MAX_TICK_MS = 60_000;

/**
 * Why the scrub leaves a damaged copy as it is: IPFS Cluster's recover re-pins pins in error only, and a damaged
 * block is pinned as far as the cluster and Kubo know; replacing it needs the bad block removed first.
 */
const DAMAGED_REPAIR =
  'not repaired: the cluster holds the pin as pinned and cannot see the damage (recover acts on pins in error ' +
  'only); on that peer, run `ipfs repo verify`, unpin and remove the bad block, then POST /pins/{cid}/recover ' +
  'so that the block is fetched again from an intact copy';

export interface ScrubberOptions {
  store: ScrubStore;
  /** The clusters in force: each one's copy of each message is read. */
  clusters: ClusterClient[];
  keyring: Keyring;
  /** SEAL_SCRUB_INTERVAL: how often each message's copies are read; 0 turns the scrub off. */
  intervalMs: number;
  /** SEAL_SCRUB_RATE: messages read per second at most, across all clusters. */
  ratePerSecond: number;
  clock: Clock;
  logger: Logger;
}

/**
 * The scrub (docs/operating.md#the-scrub), as a storage system scrubs its disks: every running sealed message's
 * copy on every cluster that holds its pin as pinned is read (offline: the cluster's own blocks, none fetched
 * from its peers) and checked against its seal, AES-256-GCM and SHA-256, streaming without keeping the content.
 * A damaged or missing copy is listed (GET /v1/admin/copies), counted on /metrics, and repaired where the
 * cluster can (a missing copy's pin recovered); an intact one is cleared from the list. One message at a time
 * at SEAL_SCRUB_RATE at most, so it never competes with sealing and reading for more than a trickle. Instances
 * share the work through seal_scrub_due: each message is read once per SEAL_SCRUB_INTERVAL, first one interval
 * after sealing.
 */
export class Scrubber {
  private readonly pass = new PeriodicPass({
    run: () => this.runOnce(),
    nextDelayMs: () => timerMs(Math.min(this.options.intervalMs, MAX_TICK_MS)),
    onError: (error) => this.options.logger.error({ err: error }, 'scrub pass failed'),
  });
  private readonly checked = new Counter({
    name: 'seal_scrub_checked_total',
    help: 'Copies of sealed messages the scrub read and checked against their seal, by cluster and what it found',
    labelNames: ['cluster', 'state'] as const,
    registers: [],
  });

  constructor(private readonly options: ScrubberOptions) {
    for (const cluster of options.clusters) {
      for (const state of ['intact', 'damaged', 'missing']) this.checked.inc({ cluster: cluster.name, state }, 0);
    }
  }

  registerMetrics(registry: Registry): void {
    registry.registerMetric(this.checked);
    const counts = cachedFor(() => this.options.store.counts());
    const names = this.options.clusters.map((cluster) => cluster.name);
    new Gauge({
      name: 'seal_scrub_copies',
      help: 'Copies of running sealed messages the scrub last found damaged or missing (GET /v1/admin/copies)',
      labelNames: ['cluster', 'state'] as const,
      registers: [registry],
      async collect() {
        const found = await counts();
        this.reset();
        for (const cluster of names) {
          for (const state of ['damaged', 'missing'] as const) {
            const row = found.find((entry) => entry.cluster === cluster && entry.state === state);
            this.set({ cluster, state }, row?.count ?? 0);
          }
        }
      },
    });
  }

  start(): void {
    if (this.options.intervalMs === 0) {
      this.options.logger.info('SEAL_SCRUB_INTERVAL is 0: the scrub is off');
      return;
    }
    this.pass.start();
  }

  stop(): Promise<void> {
    return this.pass.stop();
  }

  /** One pass: every message due is read on every cluster, at SEAL_SCRUB_RATE at most. */
  async runOnce(): Promise<{ messages: number; damaged: number; missing: number }> {
    const { store, clusters, clock, ratePerSecond, intervalMs } = this.options;
    const spacingMs = 1000 / ratePerSecond;
    const slowest = Math.max(...clusters.map((cluster) => timeoutMs(cluster.settings)));
    const totals = { messages: 0, damaged: 0, missing: 0 };
    while (!this.pass.stopped) {
      // The lease outlasts the batch read at the rate with every call taking its cluster's whole timeout.
      const leaseMs = BATCH * (spacingMs + clusters.length * 2 * slowest) + 60_000;
      const batch = await store.claimDue(BATCH, new Date(clock.now() + leaseMs), new Date(clock.now() - intervalMs));
      for (const target of batch) {
        if (this.pass.stopped) break;
        const started = Date.now();
        let findings: CopyFinding[];
        try {
          findings = await this.check(target);
          await store.record(target.id, findings, new Date(clock.now() + intervalMs));
        } catch (error) {
          // One message that cannot be checked (its key does not open, the database failed) does not stop the
          // pass; it stays leased and comes back when the lease ends.
          this.options.logger.error(
            { sealedId: target.id, err: error },
            'scrub: a sealed message could not be checked',
          );
          continue;
        }
        totals.messages++;
        for (const finding of findings) if (finding.state !== 'intact') totals[finding.state]++;
        const wait = spacingMs - (Date.now() - started);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      if (batch.length < BATCH) break;
    }
    return totals;
  }

  /** Each cluster's copy of one message, read and checked; what is wrong repaired where the cluster can. */
  private async check(target: ScrubTarget): Promise<CopyFinding[]> {
    const { clusters, keyring, logger } = this.options;
    const key = keyring.unwrap(target.wrappedKey, messageKeyLabel(target.id));
    const facts = {
      path: target.wrapped ? `/ipfs/${target.cid}/${target.fileName}` : target.cid,
      key,
      sha256: target.sha256,
      size: target.size,
    };
    const findings: CopyFinding[] = [];
    // A copy not pinned yet (or in error) is the pin follower's, listed by GET /v1/admin/unpinned: reading it
    // here would call a copy still on its way missing.
    for (const cluster of clusters.filter((entry) => target.pinnedOn.includes(entry.name))) {
      const context = { sealedId: target.id, cid: target.cid, cluster: cluster.name };
      try {
        await verifyCopy(cluster, facts, true);
        findings.push({ cluster: cluster.name, state: 'intact', detail: '', repair: '' });
        this.checked.inc({ cluster: cluster.name, state: 'intact' });
      } catch (error) {
        const problem = copyProblem(cluster.name, error);
        const state = problem.state === 'damaged' ? 'damaged' : 'missing';
        const detail = problem.state === 'unreachable' ? `unreachable: ${problem.reason}` : problem.reason;
        const repair = state === 'damaged' ? DAMAGED_REPAIR : await recover(cluster, target.cid);
        findings.push({ cluster: cluster.name, state, detail, repair });
        this.checked.inc({ cluster: cluster.name, state });
        logger[state === 'damaged' ? 'error' : 'warn'](
          { ...context, state, err: detail, repair },
          state === 'damaged'
            ? "scrub: this cluster's copy of a sealed message fails verification"
            : "scrub: this cluster's copy of a sealed message could not be read",
        );
      }
    }
    return findings;
  }
}

/** Asks the cluster to pin a missing copy again; says what came of the asking. */
async function recover(cluster: ClusterClient, cid: string): Promise<string> {
  try {
    await cluster.recover(cid);
    return `recover requested (POST /pins/${cid}/recover accepted); checked again at the next scrub`;
  } catch (error) {
    return `recover failed, to be tried at the next scrub: ${error instanceof Error ? error.message : String(error)}`;
  }
}
