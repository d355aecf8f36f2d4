import type { FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';
import type { Clock } from './clock.ts';
import type { SharedConfig } from './config.ts';
import type { Database, SchemaMigrations } from './db/index.ts';
import { listenError } from './listen-error.ts';
import { createHttpServer, type App, type BrowserPage } from './http.ts';
import type { Logger } from './logger.ts';
import { createRegistry } from './metrics.ts';
import type { ObjectStore } from './objects/index.ts';
import type { ServiceName } from './variables.ts';

/**
 * What the CLI hands every service: the shared configuration, the service's own section (its
 * src/<service>/config.ts), and the shared connections of this process.
 */
export interface ServiceContext<Settings = unknown> {
  config: SharedConfig;
  settings: Settings;
  database: Database;
  /** The object store, opened for a service that uses one (ServiceDefinition.usesObjects); see objectsOf. */
  objects?: ObjectStore;
  logger: Logger;
  /** The time every route and worker goes by; the system clock unless a test injects its own. */
  clock?: Clock;
  /**
   * True for `sealpost start all` on the embedded defaults outside production: a service may then
   * create starter data (e.g. the exchange's starter delivery rules) so that a newcomer sees it work.
   */
  embedded?: boolean;
}

export interface RunningService {
  name: string;
  /** Where the service listens, for the start-up banner (`http://127.0.0.1:8083`, `smtp://...`). */
  listening: Record<string, string>;
  app: App;
  registry: Registry;
  /**
   * Background workers by name, each able to run one pass now: a test triggers the pass it waits for
   * instead of sleeping until the worker's timer fires.
   */
  workers?: Record<string, { runOnce(): Promise<unknown> }>;
  /** Stops accepting, finishes in-flight work, stops the service's timers and workers. */
  stop(): Promise<void>;
}

/** A service as the CLI sees it: its schema's migrations and how to start it with its own settings. */
export interface ServiceDefinition<Name extends ServiceName = ServiceName, Settings = unknown> {
  name: Name;
  migrations: SchemaMigrations;
  /**
   * Whether the service keeps anything in the object store. A process whose services keep nothing there
   * opens none: it needs no S3 credentials, does not load the S3 driver, and its /readyz does not wait
   * for a store it never uses.
   */
  usesObjects: boolean;
  /**
   * V8's heap growing factor (1 + percent / 100) for a process that runs this service alone, when the one
   * V8 chooses was measured to serve it badly (kernel/heap-growth.ts); V8's own choice when unset.
   */
  heapGrowingPercent?: number;
  start(context: ServiceContext<Settings>): Promise<RunningService>;
}

export interface HttpServiceOptions {
  name: string;
  title: string;
  description: string;
  port: number;
  /** The variable the port comes from, named when it cannot be listened on. */
  portVariable: string;
  context: ServiceContext;
  /** The service's routes, registered as one encapsulated Fastify plugin. */
  // biome-ignore lint/suspicious/noExplicitAny: each service's plugin has options of its own type
  plugin: FastifyPluginAsync<any>;
  pluginOptions?: Record<string, unknown>;
  bodyLimit?: number;
  /** Extra readiness checks beside the database and the object store. */
  readiness?: Record<string, () => Promise<unknown>>;
  /** HTML pages for refusals a browser opened as a page (http.ts BrowserPage). */
  browserPage?: BrowserPage;
  /** Headers every answer carries (http.ts HttpServerOptions.headers). */
  headers?: Readonly<Record<string, string>>;
  /** The service's registry when it has metrics of its own beyond HTTP; otherwise one is created. */
  registry?: Registry;
}

/** Builds the service's Fastify app on the kernel factory, registers its plugin and listens. */
export async function startHttpService(options: HttpServiceOptions): Promise<RunningService> {
  const { context } = options;
  const objects = context.objects;
  const registry = options.registry ?? createRegistry(options.name);
  const logger = context.logger.child({ service: options.name });
  const app = await createHttpServer({
    service: options.name,
    title: options.title,
    description: options.description,
    logger,
    registry,
    bodyLimit: options.bodyLimit,
    browserPage: options.browserPage,
    headers: options.headers,
    limits: { idleTimeoutMs: context.config.http.idleTimeout, maxConnections: context.config.http.maxConnections },
    readiness: {
      database: () => context.database.ping(),
      ...(objects ? { objects: () => objects.ping() } : {}),
      ...options.readiness,
    },
  });
  await app.register(options.plugin, { ...options.pluginOptions, registry });
  try {
    await app.listen({ host: context.config.host, port: options.port });
  } catch (error) {
    await app.close().catch(() => {});
    throw listenError(error, { portVariable: options.portVariable, port: options.port, host: context.config.host });
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = context.config.host.includes(':') ? `[${context.config.host}]` : context.config.host;
  return {
    name: options.name,
    listening: { http: `http://${host}:${port}` },
    app,
    registry,
    stop: () => app.close(),
  };
}

/** The object store of a service that declared usesObjects (the CLI opens one for it). */
export function objectsOf(context: ServiceContext): ObjectStore {
  if (!context.objects) throw new Error('No object store was opened for this service (usesObjects is false)');
  return context.objects;
}
