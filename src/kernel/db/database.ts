import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { namePreparedStatements } from './prepared.ts';
import { listenOnServer, type NotificationHandlers, type Subscription } from './notifications.ts';

export interface Database {
  /** `postgres` for a server reached through DATABASE_URL, `pglite` for the embedded default. */
  readonly kind: 'postgres' | 'pglite';
  /** Kysely over the whole database; a service narrows it with `db.withSchema(<its schema>)`. */
  // biome-ignore lint/suspicious/noExplicitAny: one handle for all schemas; each service narrows it to its own
  readonly db: Kysely<any>;
  ping(): Promise<void>;
  /**
   * Subscribes to NOTIFY on `channel`. Returns at once; `handlers.listening` says when LISTEN is in place
   * (again). On PostgreSQL it holds a connection of its own beside the pool; PGlite, being in this
   * process, delivers a notification when the transaction that sent it commits, before that statement's
   * promise settles, and is never lost.
   */
  listen(channel: string, handlers: NotificationHandlers): Subscription;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** postgres:// URL; undefined selects PGlite. */
  url: string | undefined;
  /** PGlite's folder; undefined keeps PGlite in memory (tests). */
  pgliteDir?: string;
  poolSize?: number;
}

const INT8_OID = 20;

/**
 * Opens PostgreSQL through `pg`, or PGlite (PostgreSQL in WASM) when no URL is given. int8 columns come
 * back as numbers from both drivers (pg gives strings, PGlite bigints by default): our counters and
 * byte sizes stay far below 2^53, and the same code must see the same types on both.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.url) {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 5000,
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client losing its server (restart, network) must not crash the process; the pool replaces it.
    pool.on('error', () => {});
    // The pool listens only to idle clients: a checked-out client whose connection dies between two
    // statements (a server restart or failover, pg_terminate_backend) emits an 'error' nobody handles,
    // and the process crashes (node-postgres #2762). Its next statement fails instead, and the pool
    // drops it on release as no longer queryable.
    pool.on('connect', (client) => {
      client.on('error', () => {});
      namePreparedStatements(client);
    });
    // biome-ignore lint/suspicious/noExplicitAny: one handle for all schemas; each service narrows it to its own
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
    const url = options.url;
    return {
      kind: 'postgres',
      db,
      ping: async () => void (await sql`select 1`.execute(db)),
      listen: (channel, handlers) => listenOnServer(url, channel, handlers),
      close: () => db.destroy(),
    };
  }
  if (options.pgliteDir) mkdirSync(options.pgliteDir, { recursive: true });
  // Loaded only here: PGlite (PostgreSQL in WASM) adds ~40 MB to a process's RSS as soon as it is
  // imported, which a service on a PostgreSQL server never needs.
  const { PGlite, types: pgliteTypes } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const pglite = await PGlite.create(options.pgliteDir, {
    parsers: { [pgliteTypes.INT8]: (value: string) => Number(value) },
  });
  // biome-ignore lint/suspicious/noExplicitAny: one handle for all schemas; each service narrows it to its own
  const db = new Kysely<any>({ dialect: new PGliteDialect(pglite) });
  return {
    kind: 'pglite',
    db,
    ping: async () => void (await sql`select 1`.execute(db)),
    listen(channel, handlers) {
      const unlisten = pglite
        .listen(channel, (payload) => handlers.notification(payload))
        .then(
          (stop) => {
            handlers.listening();
            return stop;
          },
          (error: unknown) => {
            handlers.lost(error);
            return async () => {};
          },
        );
      return { close: async () => (await unlisten)().catch(() => {}) };
    },
    close: () => db.destroy(),
  };
}
