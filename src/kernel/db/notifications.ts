import pg from 'pg';

/** What a subscriber to a NOTIFY channel is told (Database.listen). */
export interface NotificationHandlers {
  /** A NOTIFY on the channel, with its payload ('' when none was given). */
  notification(payload: string): void;
  /**
   * LISTEN is in place, at first or again after a loss: from now on no notification is missed. Whatever
   * was announced before this call may have been missed.
   */
  listening(): void;
  /** The listening connection is gone: notifications may be missed until `listening` is called again. */
  lost(error: unknown): void;
}

export interface Subscription {
  close(): Promise<void>;
}

export interface ListenOptions {
  /** Waits between reconnection attempts, the last one repeated. */
  retryMs?: readonly number[];
  /** How often the idle connection is checked with a query, and how long that query may take. */
  checkEveryMs?: number;
  checkTimeoutMs?: number;
}

const DEFAULTS = { retryMs: [250, 500, 1000, 2000, 5000], checkEveryMs: 10_000, checkTimeoutMs: 5_000 };

/**
 * LISTEN on a connection of its own, outside the pool: a pooled connection is lent to other work and
 * returned, and its LISTEN would go with it. The connection is opened again after any loss (server
 * restart, failover, pg_terminate_backend). A connection cut without a word from the server (a dead
 * network path) would look idle for ever, so a query checks it every `checkEveryMs`; one that does not
 * answer in time counts as lost.
 *
 * Written on `pg` directly rather than with pg-listen, which has had no release since 2020 and hides
 * the moment LISTEN is in place, which the subscriber needs.
 */
export function listenOnServer(
  url: string,
  channel: string,
  handlers: NotificationHandlers,
  options: ListenOptions = {},
): Subscription {
  const { retryMs, checkEveryMs, checkTimeoutMs } = { ...DEFAULTS, ...options };
  let closed = false;
  let failures = 0;
  let current: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  const open = async () => {
    retry = undefined;
    const client = new pg.Client({
      connectionString: url,
      application_name: `sealpost listen ${channel}`,
      connectionTimeoutMillis: checkTimeoutMs,
      query_timeout: checkTimeoutMs,
      keepAlive: true,
    });
    current = client;
    let listening = false;
    let ended = false;
    let check: NodeJS.Timeout | undefined;
    const end = (error: unknown) => {
      if (ended) return;
      ended = true;
      clearInterval(check);
      client.removeAllListeners('notification');
      // Not awaited: on a dead network path the goodbye may never be acknowledged.
      client.end().catch(() => {});
      if (current === client) current = undefined;
      if (listening) handlers.lost(error);
      if (closed) return;
      const wait = retryMs[Math.min(failures, retryMs.length - 1)]!;
      failures += listening ? 0 : 1;
      retry = setTimeout(() => void open(), wait);
      retry.unref();
    };
    client.on('error', end);
    client.on('end', () => end(new Error('the LISTEN connection ended')));
    client.on('notification', (message) => {
      if (message.channel === channel) handlers.notification(message.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    } catch (error) {
      end(error);
      return;
    }
    if (ended) return;
    if (closed) {
      end(new Error('closed'));
      return;
    }
    listening = true;
    failures = 0;
    handlers.listening();
    check = setInterval(() => void client.query('select 1').catch(end), checkEveryMs);
    check.unref();
  };
  void open();

  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const client = current;
      current = undefined;
      if (client) {
        client.removeAllListeners();
        client.on('error', () => {});
        await client.end().catch(() => {});
      }
    },
  };
}
