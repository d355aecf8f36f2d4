import { randomBytes } from 'node:crypto';
import { boolean, httpUrl, integer, nonEmpty, oneOf, port, positiveDuration, text, url } from './parsers.ts';
import { weakSecretProblem } from './secret-strength.ts';
import { defineVariables, loadVariables, required, type Env, type ServiceName } from './variables.ts';

/**
 * All configuration is environment variables, read once at start (docs/design.md#configuration).
 * Nothing below the loaders reads process.env: the typed configuration is passed in. This file holds
 * what every service of the process shares; each service declares its own in src/<service>/config.ts.
 */

export { ConfigError, type ServiceName } from './variables.ts';

const NODE_ENVS = ['development', 'production', 'test'] as const;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

/** The variables every service reads, in the order docs/configuration.md lists them. */
export const SHARED_VARIABLES = defineVariables({
  env: {
    name: 'NODE_ENV',
    meaning: '`production` turns off generated tokens, the log SMS provider and starter rules',
    default: 'development',
    ...oneOf(NODE_ENVS),
  },
  logLevel: { name: 'LOG_LEVEL', meaning: 'pino log level', default: 'info', ...oneOf(LOG_LEVELS) },
  logFormat: {
    name: 'LOG_FORMAT',
    meaning:
      '`pretty`: one human line per event; `json`: one JSON object per line (for a log collector); ' +
      '`auto`: pretty when standard output is a terminal, JSON otherwise. Each request is logged at `debug`',
    default: 'auto',
    ...oneOf(LOG_FORMATS),
  },
  host: {
    name: 'HOST',
    meaning: 'address every listener binds to',
    default: '127.0.0.1',
    ...nonEmpty('a host name or IP address'),
  },
  dataDir: {
    name: 'SEALPOST_DATA_DIR',
    meaning: 'folder of the embedded defaults (PGlite database, local objects, outbox)',
    default: './data',
    ...nonEmpty('a folder path'),
  },
  databaseUrl: {
    name: 'DATABASE_URL',
    meaning: 'PostgreSQL connection string; unset: embedded PGlite in `$SEALPOST_DATA_DIR/pg`',
    secret: true,
    ...url(['postgres:', 'postgresql:'], 'a postgres:// or postgresql:// URL'),
  },
  databasePoolSize: {
    name: 'DATABASE_POOL_SIZE',
    meaning: 'PostgreSQL connections per process',
    default: '10',
    ...integer(1, 1000),
  },
  s3: {
    endpoint: { name: 'S3_ENDPOINT', meaning: 'S3 endpoint URL; unset: AWS', ...httpUrl },
    bucket: {
      name: 'S3_BUCKET',
      meaning:
        'bucket for payloads and attachments (auth and exchange; a seal process opens no object store); ' +
        'unset: local disk in `$SEALPOST_DATA_DIR/objects`',
      ...nonEmpty('a bucket name'),
    },
    region: { name: 'S3_REGION', meaning: 'S3 region', default: 'us-east-1', ...nonEmpty('a region name') },
    accessKeyId: {
      name: 'S3_ACCESS_KEY_ID',
      meaning: 'S3 access key; unset: the AWS default credential chain',
      ...text('an access key id'),
    },
    secretAccessKey: { name: 'S3_SECRET_ACCESS_KEY', meaning: 'S3 secret key', secret: true, ...text('a secret key') },
    forcePathStyle: {
      name: 'S3_FORCE_PATH_STYLE',
      meaning: 'path-style bucket addressing (needed by most self-hosted S3 servers)',
      default: 'true',
      ...boolean,
    },
  },
  adminToken: {
    name: 'ADMIN_TOKEN',
    meaning:
      'bearer token of the configuration endpoints of B and C; outside production, when unset, generated into ' +
      '`$SEALPOST_DATA_DIR/admin-token` and printed; production: 32+ characters, no placeholder',
    secret: true,
    ...nonEmpty('a non-empty token'),
  },
  serviceToken: {
    name: 'SERVICE_TOKEN',
    meaning:
      'bearer token of service-to-service calls; outside production, when unset, generated into ' +
      '`$SEALPOST_DATA_DIR/service-token` (shared by processes on that folder) and printed; ' +
      'production: 32+ characters, no placeholder',
    secret: true,
    ...nonEmpty('a non-empty token'),
  },
  http: {
    idleTimeout: {
      name: 'HTTP_IDLE_TIMEOUT',
      meaning:
        'a client that sends nothing this long while a request waits for its headers or body ' +
        '(or between requests) gets 408 and is disconnected; an upload that keeps sending is never cut',
      default: '30s',
      ...positiveDuration,
    },
    maxConnections: {
      name: 'HTTP_MAX_CONNECTIONS',
      meaning:
        'HTTP connections one service keeps open at once; ' +
        'further ones are closed at once and counted in http_connections_refused_total',
      default: '4096',
      ...integer(1, 1000000),
    },
  },
  metrics: {
    port: {
      name: 'METRICS_PORT',
      meaning:
        "port of the process's metrics listener: GET /metrics there answers the Prometheus metrics of every " +
        'service the process runs (never on the service ports, which readers may reach)',
      default: '9464',
      ...port(1),
    },
    host: {
      name: 'METRICS_HOST',
      meaning:
        'address the metrics listener binds to: loopback by default, so that /metrics is not published; ' +
        'in a container, the address Prometheus scrapes over the private network (compose: 0.0.0.0, not published)',
      default: '127.0.0.1',
      ...nonEmpty('a host name or IP address'),
    },
  },
  shutdownTimeout: {
    name: 'SHUTDOWN_TIMEOUT',
    meaning: 'how long a graceful shutdown may take before the process exits anyway',
    default: '10s',
    ...positiveDuration,
  },
});

type TokenName = 'ADMIN_TOKEN' | 'SERVICE_TOKEN';

/** The shared variables; tokens generated where they may be. Problems are added to `problems`. */
export function loadSharedConfig(env: Env, problems: string[]) {
  const values = loadVariables(SHARED_VARIABLES, env, problems);
  const production = values.env === 'production';
  const generatedTokens: TokenName[] = [];
  function token(spec: (typeof SHARED_VARIABLES)['adminToken' | 'serviceToken'], value: string | undefined): string {
    if (production) {
      const problem = value === undefined ? undefined : weakSecretProblem(spec.name, value);
      if (problem) problems.push(problem);
      return required(
        spec,
        value,
        'production needs explicit tokens (generate each with `openssl rand -base64 32`)',
        problems,
      );
    }
    if (value !== undefined) return value;
    generatedTokens.push(spec.name);
    return randomBytes(24).toString('base64url');
  }
  return {
    ...values,
    production,
    adminToken: token(SHARED_VARIABLES.adminToken, values.adminToken),
    serviceToken: token(SHARED_VARIABLES.serviceToken, values.serviceToken),
    /** Names of the tokens generated at this start, so the CLI can print them once. */
    generatedTokens,
  };
}

/** What every service gets: durations in milliseconds, sizes in bytes. */
export type SharedConfig = ReturnType<typeof loadSharedConfig>;

/** What a service's loader (src/<service>/config.ts) is given. */
export interface ServiceConfigInput {
  env: Env;
  shared: SharedConfig;
  /** Where each bad or missing variable is told; the caller fails once, listing them all. */
  problems: string[];
  /** Whether this process starts the service: only then is what it alone needs required. */
  starting: boolean;
}

export interface LoadOptions {
  /**
   * The services this process starts, so that what only they need is required (the public address
   * of the reader links, in production). Callers that only read values (tests, `sealpost migrate`) leave it out.
   */
  services?: readonly ServiceName[];
}
