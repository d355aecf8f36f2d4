import { PeriodicPass } from '../../kernel/periodic-pass.ts';
import { randomUUID } from 'node:crypto';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import { cachedFor } from '../../kernel/metrics.ts';
import type { Keyring } from '../crypto/keyring.ts';
import { messageKeyLabel } from '../crypto/secret-box.ts';
import type { KeyStore } from './key-store.ts';

/** Message keys read at a time; at SEAL_KEY_REWRAP_RATE per second a batch takes BATCH / rate seconds. */
const BATCH = 50;
/** A lease outlasts its batch by this much: a killed holder's rotation is taken over by another after it. */
const LEASE_MARGIN_MS = 15_000;

export interface RewrapperOptions {
  store: KeyStore;
  keyring: Keyring;
  /** How often an open rotation is looked for (and a lease left by a killed instance taken over). */
  intervalMs: number;
  /** SEAL_KEY_REWRAP_RATE: message keys re-wrapped per second at most, across instances (one holds the lease). */
  ratePerSecond: number;
  clock: Clock;
  logger: Logger;
}

/**
 * The re-wrap of a rotation (docs/operating.md#rotating-the-master-key): every running message key and stored
 * cluster password wrapped by another version than the current one is unwrapped and wrapped again under the current
 * one. Resumable: the rows themselves say what is left (`key_version`), so a restart, or a kill -9, goes on where
 * they stand; a key is replaced only if it is still the one read (compare-and-set), so nothing ended is brought back
 * and nothing is re-wrapped from a stale value. Once across instances: the instance holding the rotation's lease
 * works, the others look again each interval and take over a lease that ran out. At SEAL_KEY_REWRAP_RATE at most.
 */
export class Rewrapper {
  private readonly pass = new PeriodicPass({
    run: () => this.runOnce(),
    nextDelayMs: () => this.options.intervalMs,
    onError: (error) => this.options.logger.error({ err: error }, 'key re-wrap pass failed'),
  });
  private readonly holder = randomUUID();
  private readonly rewrapped = new Counter({
    name: 'seal_key_rewrapped_total',
    help: 'Message keys and cluster passwords this instance re-wrapped under the current master key version',
    labelNames: ['kind'] as const,
    registers: [],
  });
  private readonly failed = new Counter({
    name: 'seal_key_rewrap_failures_total',
    help: 'Message keys the re-wrap could not unwrap (their version is missing or is another key); retried',
    registers: [],
  });

  constructor(private readonly options: RewrapperOptions) {
    for (const kind of ['message_key', 'cluster_password']) this.rewrapped.inc({ kind }, 0);
  }

  registerMetrics(registry: Registry): void {
    registry.registerMetric(this.rewrapped);
    registry.registerMetric(this.failed);
    // Counted at most once a second: a rotation's progress shows on the next scrape, and the count is one index scan.
    const remaining = cachedFor(() => this.options.store.remaining(), 1_000);
    const { keyring } = this.options;
    new Gauge({
      name: 'seal_key_rewrap_remaining',
      help:
        'Running message keys and stored cluster passwords each master key version still wraps; a version other ' +
        'than the current one can be removed once it is at 0',
      labelNames: ['version'] as const,
      registers: [registry],
      async collect() {
        const found = await remaining();
        this.reset();
        for (const { version } of keyring.versions()) this.set({ version: String(version) }, 0);
        for (const entry of found)
          this.set({ version: String(entry.version) }, entry.messages + entry.clusterPasswords);
      },
    });
    new Gauge({
      name: 'seal_key_version_current',
      help: 'The master key version that wraps new message keys and stored passwords',
      registers: [registry],
      collect() {
        this.set(keyring.current);
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
   * One pass: when a rotation to the current version is open and this instance gets its lease, everything another
   * version wraps is re-wrapped, then the rotation is closed. Returns how many were re-wrapped here.
   */
  async runOnce(): Promise<number> {
    const { store, keyring, clock, ratePerSecond, logger } = this.options;
    const version = keyring.current;
    const rotation = await store.rotation(version);
    if (!rotation || rotation.finishedAt) return 0;
    const spacingMs = 1000 / ratePerSecond;
    const leaseMs = () => BATCH * spacingMs + LEASE_MARGIN_MS;
    if (!(await store.lease(version, new Date(clock.now() + leaseMs()), this.holder))) return 0;
    logger.info({ version }, 'key rotation: re-wrapping under the current master key version');
    let total = 0;
    let failures = 0;
    try {
      for (const config of await store.clusterConfigs()) {
        const count = await store.rewrapClusterConfig(config.id, keyring);
        this.rewrapped.inc({ kind: 'cluster_password' }, count);
        total += count;
      }
      let after: string | undefined;
      while (!this.pass.stopped) {
        const batch = await store.wrappedByOthers(version, BATCH, after);
        if (batch.length === 0) break;
        let done = 0;
        for (const entry of batch) {
          if (this.pass.stopped) break;
          after = entry.id;
          const started = Date.now();
          let rewrapped: string;
          try {
            const label = messageKeyLabel(entry.id);
            rewrapped = keyring.wrap(keyring.unwrap(entry.wrappedKey, label), label);
          } catch (error) {
            // Left as it is, counted and logged; the rotation stays open and the key is tried at the next pass.
            failures++;
            this.failed.inc();
            logger.error({ sealedId: entry.id, err: error }, 'key rotation: a message key could not be re-wrapped');
            continue;
          }
          if (await store.replaceMessageKey(entry.id, entry.wrappedKey, rewrapped, version)) {
            done++;
            this.rewrapped.inc({ kind: 'message_key' });
          }
          const wait = spacingMs - (Date.now() - started);
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
        total += done;
        if (!(await store.lease(version, new Date(clock.now() + leaseMs()), this.holder))) {
          logger.warn({ version }, 'key rotation: the lease went to another instance, which goes on from here');
          return total;
        }
      }
      if (this.pass.stopped) {
        await store.release(version, this.holder);
        return total;
      }
      if (failures === 0) {
        await store.finish(version);
        logger.info({ version, rewrapped: total }, 'key rotation finished: nothing is wrapped by another version');
      } else {
        await store.release(version, this.holder);
      }
    } catch (error) {
      await store.release(version, this.holder).catch(() => {});
      throw error;
    }
    return total;
  }
}
