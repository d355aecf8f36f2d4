import { readFile } from 'node:fs/promises';
import { rootCertificates } from 'node:tls';
import type { Kysely } from 'kysely';
import { systemClock } from '../kernel/clock.ts';
import { createRegistry } from '../kernel/metrics.ts';
import { ReadinessProblem } from '../kernel/http.ts';
import { startHttpService, type ServiceDefinition } from '../kernel/service.ts';
import { ClusterClient } from './clusters/client.ts';
import { redactCluster } from './clusters/config.ts';
import { loadConfigInForce } from './clusters/in-force.ts';
import { ClusterConfigStore } from './clusters/store.ts';
import { ContactStore } from './contacts/contact-store.ts';
import { resolveKeyring } from './crypto/master-key.ts';
import { KeyStore } from './keys/key-store.ts';
import { Rewrapper } from './keys/rewrapper.ts';
import { EndStore } from './ending/end-store.ts';
import { SealEnder } from './ending/ender.ts';
import { migrations } from './migrations/index.ts';
import { sealPlugin } from './plugin.ts';
import { PinFollower } from './sealing/repin.ts';
import { Sealer } from './sealing/sealer.ts';
import { SealedStore } from './sealing/store.ts';
import { Scrubber } from './scrub/scrubber.ts';
import { ScrubStore } from './scrub/scrub-store.ts';
import { SenderStore } from './senders/sender-store.ts';
import { TrailRetention } from './trail/retention.ts';
import { TrailStore } from './trail/trail-store.ts';
import type { SealTables } from './tables.ts';
import type { SealConfig } from './config.ts';

/** How often an open key rotation is looked for, and a lease left by a stopped instance taken over. */
const REWRAP_LOOK_MS = 5_000;

/** Component B: holds the IPFS cluster configuration and seals messages onto IPFS. */
export const sealService: ServiceDefinition<'seal', SealConfig> = {
  name: 'seal',
  migrations: { schema: 'seal', migrations },
  // Sealed content lives on IPFS, records in PostgreSQL: nothing in the object store.
  usesObjects: false,
  // With V8's own factor (about 1.6 here) this process, reading 100 KB messages one after another, went into
  // a full collection every 200-400 ms in most runs, which nearly doubled its CPU per read; at 2 it did 2-5
  // in a run of 2,000 reads (bench/RESULTS.md, "The seal service's full collections").
  heapGrowingPercent: 100,
  async start(context) {
    const { config, settings: seal } = context;
    const logger = context.logger.child({ service: 'seal' });
    const db = context.database.db.withSchema('seal') as Kysely<SealTables>;
    const clock = context.clock ?? systemClock;

    const { keyring, generatedFile } = await resolveKeyring(config, seal);
    if (generatedFile)
      logger.info(
        { file: generatedFile },
        'SEAL_MASTER_KEY is not set: generated one into the data folder (set it in production)',
      );
    const keyStore = new KeyStore(db, clock);
    let inForce: Awaited<ReturnType<typeof loadConfigInForce>>;
    const configStore = new ClusterConfigStore(db, keyring);
    try {
      // Nothing is wrapped under a version that is not the key it was, or without every version still in use.
      await keyStore.checkVersions(keyring);
      await keyStore.assertConfigured(keyring);
      inForce = await loadConfigInForce(configStore, seal.envCluster);
    } catch (error) {
      keyring.close();
      throw error;
    }
    logger.info({ current: keyring.current, versions: keyring.versions() }, 'master key versions');
    const ca = seal.clusterCaFile ? [...rootCertificates, await readCaFile(seal.clusterCaFile)] : undefined;
    const clusters = inForce.clusters.map(
      (settings) => new ClusterClient(settings, { proxyPort: seal.ipfsProxyPort, ca }),
    );
    logger.info(
      { source: inForce.source, clusters: inForce.clusters.map(redactCluster) },
      'IPFS cluster configuration in force',
    );

    const sealedStore = new SealedStore(db, clock);
    const contactStore = new ContactStore(db, clock);
    const follower = new PinFollower({
      store: sealedStore,
      clusters,
      repinIntervalMs: seal.repinInterval,
      checkIntervalMs: seal.pinCheckInterval,
      deadlineMs: seal.pinDeadline,
      clock,
      logger,
    });
    const sealer = new Sealer({
      store: sealedStore,
      clusters,
      keyring,
      maxMessageSize: seal.maxMessageSize,
      expiry: {
        ...(seal.defaultExpiry !== undefined ? { defaultMs: seal.defaultExpiry } : {}),
        ...(seal.maxExpiry !== undefined ? { maxMs: seal.maxExpiry } : {}),
      },
      repinDelayMs: seal.repinInterval,
      pinCheckMs: seal.pinCheckInterval,
      numbers: contactStore,
      watchPins: (pins) => follower.watch(pins),
      clock,
      logger,
    });
    const endStore = new EndStore(db, clock);
    const ender = new SealEnder({ store: endStore, clusters, intervalMs: seal.endInterval, clock, logger });
    const trailStore = new TrailStore(db, clock);
    const trailRetention = new TrailRetention({ store: trailStore, retentionMs: seal.trailRetention, logger });
    const scrubStore = new ScrubStore(db, clock);
    const scrubber = new Scrubber({
      store: scrubStore,
      clusters,
      keyring,
      intervalMs: seal.scrubInterval,
      ratePerSecond: seal.scrubRate,
      clock,
      logger,
    });
    const rewrapper = new Rewrapper({
      store: keyStore,
      keyring,
      intervalMs: REWRAP_LOOK_MS,
      ratePerSecond: seal.keyRewrapRate,
      clock,
      logger,
    });
    const registry = createRegistry('seal');
    rewrapper.registerMetrics(registry);
    follower.registerMetrics(registry);
    sealer.registerMetrics(registry);
    ender.registerMetrics(registry);
    scrubber.registerMetrics(registry);
    contactStore.registerMetrics(registry);

    const running = await startHttpService({
      name: 'seal',
      title: 'Sealpost seal service (B)',
      description:
        'IPFS cluster configuration and sealed messages: each message is encrypted with its own AES-256-GCM key, ' +
        'added through the primary cluster and pinned on all. The configuration in force is read at start ' +
        '(stored through POST /v1/ipfs/config, else the IPFS_CLUSTER_* variables) and stays until the restart.',
      port: seal.port,
      portVariable: 'SEAL_PORT',
      context,
      plugin: sealPlugin,
      pluginOptions: {
        configStore,
        inForce,
        sealer,
        sealedStore,
        endStore,
        ender,
        trailStore,
        scrubStore,
        keyStore,
        keyring,
        senderStore: new SenderStore(db),
        contactStore,
        maxExpiryMs: seal.maxExpiry,
        adminToken: config.adminToken,
        serviceToken: config.serviceToken,
        publicUrl: seal.publicUrl,
        maxMessageSize: seal.maxMessageSize,
        pinDeadlineMs: seal.pinDeadline,
        clock,
      },
      registry,
      // B is ready when its primary cluster answers, and the IPFS daemon behind it too (GET /id is 200
      // with the daemon down; its ipfs.error says so): docs/specification.md#common-endpoints.
      readiness: { ipfsCluster: () => clustersReady(clusters) },
    });
    follower.start();
    ender.start();
    trailRetention.start();
    scrubber.start();
    rewrapper.start();
    return {
      ...running,
      workers: { pinFollower: follower, ender, trailRetention, scrubber, rewrapper },
      async stop() {
        await rewrapper.stop();
        await scrubber.stop();
        await trailRetention.stop();
        await ender.stop();
        await follower.stop();
        await sealer.settle();
        await running.stop();
        keyring.close();
      },
    };
  },
};

/**
 * Every cluster answers on both paths it is used on: its REST API (/id, with the IPFS daemon behind it)
 * for sealing and pinning, and its IPFS API (POST /api/v0/version) for the reads readers wait on. Each
 * failure is shown in /readyz with the cluster and the endpoint and setting that failed.
 */
async function clustersReady(clusters: readonly ClusterClient[]): Promise<void> {
  const problems = await Promise.all(
    clusters.map(async (cluster) => {
      const found: string[] = [];
      try {
        const { ipfsError } = await cluster.id();
        if (ipfsError !== '')
          found.push(`${cluster.name} answers, but the IPFS daemon behind it does not: ${ipfsError}`);
      } catch (error) {
        found.push(`${(error as Error).message} (its REST API)`);
      }
      try {
        await cluster.ipfsVersion();
      } catch (error) {
        found.push((error as Error).message);
      }
      return found;
    }),
  );
  const all = problems.flat();
  if (all.length > 0) throw new ReadinessProblem(all.join('; '));
}

async function readCaFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`IPFS_CLUSTER_CA_FILE=${path} cannot be read: ${(error as Error).message}`);
  }
}
