import { LRUCache } from 'lru-cache';
import type { Database, Subscription } from '../../kernel/db/index.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { SessionRow } from '../tables.ts';

/**
 * The channel the sessions table's trigger (migration 0006) announces every changed or deleted row on,
 * with the row's token hash as it was before the change; an empty payload stands for every row (TRUNCATE).
 */
export const SESSION_CHANGES_CHANNEL = 'auth_sessions';

export type CacheLookup = 'hit' | 'miss' | 'bypass';

/** A read from PostgreSQL under way: `stale` once the row was announced changed while it ran. */
interface Read {
  promise: Promise<SessionRow | undefined>;
  stale: boolean;
}

/**
 * Session rows as read, by token hash, so that a request with a known session does not ask PostgreSQL
 * (docs/decisions.md#session-cache). Every change to a row reaches every instance: the writing instance
 * forgets the row itself once its write is committed, the others hear it from the database's trigger
 * through LISTEN. Only while that LISTEN is in place may a row be served from here; without it every
 * lookup reads PostgreSQL, and the rows are dropped when it is lost and again when it is back, since
 * announcements may have been missed in between.
 *
 * A read that was under way when its row was announced changed may hold the row from before the change:
 * it is answered but not kept. Lookups of one token at the same time share one read.
 */
export class SessionCache {
  private readonly rows: LRUCache<string, SessionRow>;
  private readonly reads = new Map<string, Read>();
  private listening = false;

  constructor(
    options: { maxEntries: number; ttlMs: number },
    private readonly observe: { lookup(result: CacheLookup): void; serving(on: boolean): void } = {
      lookup() {},
      serving() {},
    },
  ) {
    // The lifetime counts from the read and in real time: it bounds how long a row could outlive a change
    // whose announcement was lost without the connection seeming lost, whatever a clock in tests says.
    // lru-cache takes whole milliseconds; a duration such as 1500us is rounded up.
    const ttl = Math.max(1, Math.ceil(options.ttlMs));
    this.rows = new LRUCache({ max: options.maxEntries, ttl, updateAgeOnGet: false });
  }

  /** The row for `tokenHash` from the cache, or from `load` (PostgreSQL), kept when nothing changed it meanwhile. */
  get(tokenHash: string, load: () => Promise<SessionRow | undefined>): Promise<SessionRow | undefined> {
    if (!this.listening) {
      this.observe.lookup('bypass');
      return load();
    }
    const cached = this.rows.get(tokenHash);
    if (cached) {
      this.observe.lookup('hit');
      return Promise.resolve(cached);
    }
    this.observe.lookup('miss');
    const running = this.reads.get(tokenHash);
    if (running) return running.promise;
    const read: Read = { promise: load(), stale: false };
    this.reads.set(tokenHash, read);
    const done = () => {
      if (this.reads.get(tokenHash) === read) this.reads.delete(tokenHash);
    };
    read.promise.then((row) => {
      done();
      // No negative entries: a token nobody holds would only crowd out the sessions in use.
      if (row && !read.stale && this.listening) this.rows.set(tokenHash, Object.freeze(row));
    }, done);
    return read.promise;
  }

  /** The row was changed or deleted: neither the cached copy nor a read under way is kept. */
  forget(tokenHash: string): void {
    this.rows.delete(tokenHash);
    const read = this.reads.get(tokenHash);
    if (read) {
      read.stale = true;
      this.reads.delete(tokenHash);
    }
  }

  clear(): void {
    this.rows.clear();
    for (const read of this.reads.values()) read.stale = true;
    this.reads.clear();
  }

  /** LISTEN is in place: from now on every change is heard. Anything changed before may have been missed. */
  startServing(): void {
    this.clear();
    this.listening = true;
    this.observe.serving(true);
  }

  /** LISTEN is lost: changes may go unheard, so every lookup reads PostgreSQL until it is back. */
  stopServing(): void {
    this.listening = false;
    this.clear();
    this.observe.serving(false);
  }

  /** Follows the trigger's announcements on `database`: the cache serves only while they are heard. */
  follow(database: Database, logger: Logger): Subscription {
    let lostOnce = false;
    return database.listen(SESSION_CHANGES_CHANNEL, {
      notification: (tokenHash) => (tokenHash === '' ? this.clear() : this.forget(tokenHash)),
      listening: () => {
        this.startServing();
        if (lostOnce) logger.info('session changes are heard again: the session cache is in use again');
      },
      lost: (error) => {
        lostOnce = true;
        this.stopServing();
        logger.warn(
          { err: error },
          'lost the LISTEN connection for session changes: sessions are read from PostgreSQL',
        );
      },
    });
  }
}
