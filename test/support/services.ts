import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Clock } from '../../src/kernel/clock.ts';
import { loadConfig, type Config } from '../../src/cli/config.ts';
import { openDatabase, migrateSchema, type Database } from '../../src/kernel/db/index.ts';
import { createLogger, type Logger } from '../../src/kernel/logger.ts';
import { createObjectStore, type ObjectStore } from '../../src/kernel/objects/index.ts';
import { createS3ObjectStore } from '../../src/kernel/objects/s3.ts';
import { startMetricsListener } from '../../src/kernel/metrics-listener.ts';
import type { RunningService, ServiceDefinition } from '../../src/kernel/service.ts';
import type { ServiceName } from '../../src/kernel/variables.ts';
import { createTestDatabase } from './postgres.ts';
import { captureLogs } from './capture-logs.ts';
import { freePort } from './ports.ts';
import { s3Env, uniqueBucket, type S3TestServer } from './s3-server.ts';

export interface ServiceUnderTest {
  config: Config;
  service: RunningService;
  database: Database;
  objects: ObjectStore;
  /** Every log line the service wrote, parsed (tests read them to check what is and is not logged). */
  logs: Array<Record<string, unknown>>;
  url: string;
  /** The metrics listener's base URL (METRICS_PORT): `${metricsUrl}/metrics`, as a real process serves it. */
  metricsUrl: string;
  adminToken: string;
  serviceToken: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Environment on top of the test defaults (free ports, fixed tokens). */
  env?: Record<string, string>;
  /** A real S3 server for the payloads; without one, objects go to a temp folder (local driver). */
  s3?: S3TestServer;
  /** Use this database URL rather than a fresh one (e.g. two instances on one database). */
  databaseUrl?: string;
  /** In-memory PGlite, the embedded default's engine, rather than a fresh PostgreSQL database. */
  pglite?: boolean;
  embedded?: boolean;
  /** The clock the service goes by (a TestClock to move time forward); the system clock otherwise. */
  clock?: Clock;
}

/**
 * Starts one service in this process the way `sealpost start <name>` does, against a fresh PostgreSQL
 * database of its own and (optionally) a fresh bucket on the real S3 server, on free loopback ports.
 */
export async function startServiceForTest<Name extends ServiceName>(
  definition: ServiceDefinition<Name, Config[Name]>,
  options: StartOptions = {},
): Promise<ServiceUnderTest> {
  const dataDir = await mkdtemp(join(tmpdir(), `sealpost-${definition.name}-`));
  const fresh = options.databaseUrl || options.pglite ? undefined : await createTestDatabase(definition.name);
  const databaseUrl = options.databaseUrl ?? fresh?.url;
  const bucket = options.s3 ? uniqueBucket(definition.name) : undefined;
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'debug',
    HOST: '127.0.0.1',
    SEALPOST_DATA_DIR: dataDir,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ADMIN_TOKEN: 'test-admin-token',
    SERVICE_TOKEN: 'test-service-token',
    AUTH_PORT: String(await freePort()),
    SEAL_PORT: String(await freePort()),
    EXCHANGE_PORT: String(await freePort()),
    INBOUND_SMTP_PORT: String(await freePort()),
    METRICS_PORT: String(await freePort()),
    ...(options.s3 ? s3Env(options.s3, bucket!) : {}),
    ...options.env,
  };
  const config = loadConfig(env);
  const { lines: logs, stream } = captureLogs();
  const logger = createLogger({ level: config.logLevel }, stream);
  const database = await openDatabase({ url: config.databaseUrl, poolSize: 8 });
  if (bucket) await createS3ObjectStore({ ...config.s3, bucket }).ensureBucket();
  // As the CLI does: a service that keeps nothing in the object store gets none.
  const objects = definition.usesObjects
    ? await createObjectStore({ s3: config.s3, dataDir: config.dataDir })
    : undefined;
  await migrateSchema(database.db, definition.migrations);
  const service = await definition.start({
    config,
    settings: config[definition.name],
    database,
    objects,
    logger,
    clock: options.clock,
    embedded: options.embedded ?? false,
  });
  const metrics = await startMetricsListener({
    host: config.metrics.host,
    port: config.metrics.port,
    registries: [service.registry],
  });
  return {
    config,
    service,
    database,
    objects: objects ?? noObjectStore(definition.name),
    logs,
    url: service.listening.http!,
    metricsUrl: metrics.url,
    adminToken: config.adminToken,
    serviceToken: config.serviceToken,
    async stop() {
      await service.stop();
      await metrics.close();
      await objects?.close();
      await database.close();
      await fresh?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export type { Logger };

/** The object store a test gets for a service that opens none (the seal service): any use of it throws. */
function noObjectStore(service: string): ObjectStore {
  return new Proxy({} as ObjectStore, {
    get(_target, property) {
      if (property === 'then') return undefined; // not a thenable: `await` hands it back as it is
      throw new Error(`The ${service} service opens no object store (asked for ${String(property)})`);
    },
  });
}
