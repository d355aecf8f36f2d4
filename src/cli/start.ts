import { join, resolve } from 'node:path';
import type { Config } from './config.ts';
import { TOKEN_FILES } from './tokens.ts';
import type { SharedConfig } from '../kernel/config.ts';
import { lockDataFolder } from '../kernel/data-lock.ts';
import { openDatabase, migrateSchema, type Database } from '../kernel/db/index.ts';
import { listenError } from '../kernel/listen-error.ts';
import type { Logger } from '../kernel/logger.ts';
import type { Clock } from '../kernel/clock.ts';
import { createObjectStore, type ObjectStore } from '../kernel/objects/index.ts';
import { fixHeapGrowth } from '../kernel/heap-growth.ts';
import { startMetricsListener } from '../kernel/metrics-listener.ts';
import { replySizeWarning } from '../auth/replies/exchange-limit.ts';
import type { RunningService, ServiceContext, ServiceDefinition } from '../kernel/service.ts';
import type { ServiceName } from '../kernel/variables.ts';
/**
 * Loaded on demand: a process that runs one service (production) does not load the other two, nor the
 * devstack, which keeps its memory and start-up to what it uses.
 */
const SERVICES: { [Name in ServiceName]: () => Promise<ServiceDefinition<Name, Config[Name]>> } = {
  seal: async () => (await import('../seal/service.ts')).sealService,
  exchange: async () => (await import('../exchange/service.ts')).exchangeService,
  auth: async () => (await import('../auth/service.ts')).authService,
};
/** Start order: seal first (exchange delivers to it), auth last (it reads from seal, replies to exchange). */
const START_ORDER: ServiceName[] = ['seal', 'exchange', 'auth'];

export interface Sealpost {
  config: Config;
  services: RunningService[];
  /** The process's metrics listener (METRICS_PORT): `${metricsUrl}/metrics`. */
  metricsUrl: string;
  /** Human lines telling where everything listens and what runs embedded. */
  banner: string[];
  stop(): Promise<void>;
}

/**
 * The database, and the object store when `withObjects` (some service of the process keeps objects).
 * The embedded PGlite is opened only under the data folder's lock (kernel/data-lock.ts), released by
 * `database.close()`: a second process on the folder is refused before it touches the database.
 */
export async function openStores(
  config: SharedConfig,
  withObjects: boolean,
): Promise<{ database: Database; objects: ObjectStore | undefined }> {
  const lock = config.databaseUrl
    ? undefined
    : await lockDataFolder(config.dataDir, `sealpost ${process.argv.slice(2).join(' ')}`.trim());
  let opened: Database;
  try {
    opened = await openDatabase({
      url: config.databaseUrl,
      pgliteDir: join(resolve(config.dataDir), 'pg'),
      poolSize: config.databasePoolSize,
    });
  } catch (error) {
    await lock?.release();
    throw error;
  }
  const database: Database = lock
    ? {
        kind: opened.kind,
        db: opened.db,
        ping: () => opened.ping(),
        listen: (channel, handlers) => opened.listen(channel, handlers),
        close: async () => {
          try {
            await opened.close();
          } finally {
            await lock.release();
          }
        },
      }
    : opened;
  if (!withObjects) return { database, objects: undefined };
  try {
    return { database, objects: await createObjectStore({ s3: config.s3, dataDir: resolve(config.dataDir) }) };
  } catch (error) {
    await database.close();
    throw error;
  }
}

export async function migrate(database: Database, names: ServiceName[], logger: Logger): Promise<void> {
  for (const name of names) {
    const applied = await migrateSchema(database.db, (await SERVICES[name]()).migrations);
    if (applied.length > 0) logger.info({ schema: name, applied }, 'migrations applied');
  }
}

/**
 * Starts the named services in this process. `all` on a machine with nothing configured is the embedded
 * default (docs/design.md#embedded-defaults): PGlite, local-disk objects and an IPFS Cluster stand-in.
 */
export interface StartOptions {
  /** Start the IPFS Cluster stand-in and point the seal service at it (the embedded default). */
  ipfsStandIn?: boolean;
  /** The embedded default (`start all`, not production): services may create starter data. */
  embedded?: boolean;
  /** The time every service goes by; the system clock when unset. */
  clock?: Clock;
}

export async function startSealpost(
  baseConfig: Config,
  names: ServiceName[],
  logger: Logger,
  options: StartOptions = {},
): Promise<Sealpost> {
  let config = baseConfig;
  const definitions = await Promise.all(names.map((name) => SERVICES[name]()));
  heapGrowthFor(definitions, logger);
  const warnings = startWarnings(config, names);
  for (const warning of warnings) logger.warn(warning);
  const { database, objects } = await openStores(
    config,
    definitions.some((definition) => definition.usesObjects),
  );
  const cleanups: Array<() => Promise<void>> = [() => database.close()];
  if (objects) cleanups.push(() => objects.close());
  const services: RunningService[] = [];
  const embedded: string[] = [];
  let metricsUrl = '';
  const stop = async () => {
    for (const service of [...services].reverse()) await service.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  try {
    await migrate(database, names, logger);
    if (database.kind === 'pglite') embedded.push(`PGlite database in ${join(resolve(config.dataDir), 'pg')}`);
    if (objects?.driver === 'local')
      embedded.push(`objects on local disk in ${join(resolve(config.dataDir), 'objects')}`);

    // The seal service needs an IPFS cluster; on the embedded default a stand-in plays it (no Kubo here).
    if (options.ipfsStandIn && names.includes('seal')) {
      const { startIpfsClusterStandIn } = await import('../devstack/ipfs-cluster/index.ts');
      // Both listeners on ports named by a variable, so that two instances and a firewall can plan for them.
      const restPort = config.seal.clusterPort;
      const standIn = await startIpfsClusterStandIn({
        host: '127.0.0.1',
        port: restPort,
        proxyPort: config.seal.ipfsProxyPort,
        dataDir: join(resolve(config.dataDir), 'ipfs-cluster'),
      }).catch((error: unknown) => {
        // Node's listen error carries the port it tried: the REST API's or the proxy's.
        const rest = (error as { port?: unknown })?.port === restPort && restPort !== config.seal.ipfsProxyPort;
        throw listenError(error, {
          portVariable: rest ? 'IPFS_CLUSTER_PORT' : 'IPFS_PROXY_PORT',
          port: rest ? restPort : config.seal.ipfsProxyPort,
          host: '127.0.0.1',
        });
      });
      cleanups.push(() => standIn.close());
      config = {
        ...config,
        seal: { ...config.seal, envCluster: { host: '127.0.0.1', port: String(standIn.port), secure: false } },
      };
      embedded.push(`IPFS Cluster stand-in at ${standIn.url} (IPFS proxy ${standIn.proxyUrl})`);
    }

    const shared = { database, objects, logger, embedded: options.embedded ?? false, clock: options.clock };
    for (const name of START_ORDER.filter((n) => names.includes(n)))
      services.push(await startService(name, config, shared));
    // One listener for the process, after the services so that it serves each of their registries.
    const metrics = await startMetricsListener({
      host: config.metrics.host,
      port: config.metrics.port,
      registries: services.map((service) => service.registry),
    });
    cleanups.push(() => metrics.close());
    metricsUrl = metrics.url;
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
  return { config, services, metricsUrl, banner: banner(config, services, metricsUrl, embedded, warnings), stop };
}

/**
 * A process that runs one service alone takes the heap growing factor that service asks for, if any. Not
 * with several: the factor is the whole process's, and measured per service (the auth service, for one,
 * does more full collections under the seal service's factor than under V8's own).
 */
function heapGrowthFor(definitions: ServiceDefinition[], logger: Logger): void {
  const [definition] = definitions;
  if (definitions.length !== 1 || definition?.heapGrowingPercent === undefined) return;
  const { percent, operator } = fixHeapGrowth(definition.heapGrowingPercent);
  logger.info(
    { service: definition.name, heapGrowingPercent: percent },
    operator ? 'V8 heap growing factor as given to node' : 'V8 heap growing factor fixed for this service',
  );
}

/** One service, handed the shared configuration and its own section, and no other service's. */
async function startService<Name extends ServiceName>(
  name: Name,
  config: Config,
  shared: Omit<ServiceContext, 'config' | 'settings'>,
): Promise<RunningService> {
  const definition = await SERVICES[name]();
  const { auth, seal, exchange, ...sharedConfig } = config;
  return definition.start({ ...shared, config: sharedConfig, settings: config[name] });
}

/**
 * Settings that each pass their own check but do not fit together. Only a process that runs both
 * services knows both values; split across processes, docs/decisions.md#limits-to-line-up says it.
 */
export function startWarnings(config: Config, names: ServiceName[]): string[] {
  const warnings: string[] = [];
  if (names.includes('auth') && names.includes('exchange')) {
    const replies = replySizeWarning(config.auth.attachments.replyMaxTotalSize, config.exchange.smtpMaxMessageSize);
    if (replies) warnings.push(replies);
  }
  return warnings;
}

function banner(
  config: Config,
  services: RunningService[],
  metricsUrl: string,
  embedded: string[],
  warnings: string[],
): string[] {
  const lines = ['Sealpost is running.'];
  for (const service of services) {
    for (const [kind, url] of Object.entries(service.listening)) {
      const note = kind === 'http' ? `API description ${url}/swagger/` : kind === 'smtp' ? 'inbound mail' : '';
      lines.push(`  ${service.name.padEnd(9)} ${url.padEnd(26)} ${note}`);
    }
  }
  lines.push(`  ${'metrics'.padEnd(9)} ${`${metricsUrl}/metrics`.padEnd(26)} Prometheus (METRICS_PORT, not public)`);
  if (services.some((s) => s.name === 'auth')) lines.push(`  reader links: ${config.auth.publicUrl}/m/{id}`);
  if (embedded.length > 0) lines.push('Embedded defaults:', ...embedded.map((line) => `  ${line}`));
  for (const warning of warnings) lines.push(`Warning: ${warning}`);
  for (const name of config.generatedTokens) {
    const value = name === 'ADMIN_TOKEN' ? config.adminToken : config.serviceToken;
    const file = join(resolve(config.dataDir), TOKEN_FILES[name]);
    lines.push(`Generated ${name}=${value} (kept in ${file} for every start on it; set ${name} to choose your own)`);
  }
  return lines;
}
