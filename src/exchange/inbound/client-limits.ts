import { LRUCache } from 'lru-cache';
import { clientKey } from '../../kernel/client-key.ts';
import type { PerPeriod } from '../../kernel/parsers.ts';

/**
 * AUTH failures remembered per client address, across its connections (Postfix's anvil, fail2ban): each
 * failure is answered a little later than the one before, and past `failures` within `windowMs` the
 * client is refused for `refuseMs`. Fixed, not settings: an honest client fails once or twice when a
 * password changed, and a mail server in front fails every time or never (docs/decisions.md).
 */
export interface AuthFailureMemory {
  /** Failures from one address after which it is refused. */
  failures: number;
  /** A failure is forgotten this long after the address's last one. */
  windowMs: number;
  /** How long the address is refused once it reached `failures`. */
  refuseMs: number;
  /** The reply to a failure waits this long per earlier failure of the address... */
  delayStepMs: number;
  /** ...and never longer than this. */
  maxDelayMs: number;
}

export const AUTH_FAILURE_MEMORY: AuthFailureMemory = {
  failures: 10,
  windowMs: 10 * 60_000,
  refuseMs: 10 * 60_000,
  delayStepMs: 500,
  maxDelayMs: 3_000,
};

export interface ClientLimitSettings {
  /** INBOUND_SMTP_CLIENT_CONNECTIONS: connections open at once per address; 0: no limit. */
  connections: number;
  /** INBOUND_SMTP_CLIENT_RATE: connections per period per address; undefined: no limit. */
  rate: PerPeriod | undefined;
  authFailures: AuthFailureMemory;
}

export type ClientRefusal = 'client_connections' | 'client_rate' | 'auth_failures';

/**
 * Addresses remembered for the rate and the failures, at most: past it the least recently seen are
 * forgotten (about 100 bytes each). A client cycling through more addresses than this gets fresh counts
 * on the ones forgotten; the connection count (its own map) is exact, as it is bounded by the connections.
 */
const ADDRESSES_REMEMBERED = 50_000;

/**
 * Per-client limits of the SMTP door, counted per clientKey (an IPv6 client per /64). The connection count
 * and rate spare the allowed networks (Postfix's smtpd_client_event_limit_exceptions = $mynetworks): a
 * Postfix in front is one address for all the organisation's mail. AUTH failures count for every client.
 */
export class ClientLimits {
  /** Connections open per address, and the address each admitted connection counts for. */
  private readonly open = new Map<string, number>();
  private readonly admitted = new Map<string, string>();
  /** Connections since the address's window began; the entry lives one period (the window is fixed). */
  private readonly rates: LRUCache<string, { count: number }>;
  /** Failures within the window; at `failures` the entry lives `refuseMs`, and while it does the address is refused. */
  private readonly failures: LRUCache<string, { count: number }>;

  constructor(private readonly settings: ClientLimitSettings) {
    this.rates = new LRUCache({ max: ADDRESSES_REMEMBERED, ttl: settings.rate?.periodMs ?? 60_000 });
    this.failures = new LRUCache({ max: ADDRESSES_REMEMBERED, ttl: settings.authFailures.windowMs });
  }

  /**
   * A new connection (`id`, smtp-server's session id) from `address`: the limit it is over, if any;
   * otherwise it counts as open until release(id). `allowed`: the client is in the allowed networks.
   */
  admit(id: string, address: string, allowed: boolean): ClientRefusal | undefined {
    // A client of the allowed networks that failed AUTH too often may still submit as those networks may.
    if (allowed) return undefined;
    if (this.authRefused(address)) return 'auth_failures';
    const key = clientKey(address);
    const { connections, rate } = this.settings;
    if (rate) {
      // Every connection counts, refused or not, as anvil counts them: a client must slow down to get in.
      const window = this.rates.get(key);
      if (window) this.rates.set(key, { count: window.count + 1 }, { noUpdateTTL: true });
      else this.rates.set(key, { count: 1 });
      if ((window?.count ?? 0) + 1 > rate.amount) return 'client_rate';
    }
    const open = this.open.get(key) ?? 0;
    if (connections > 0 && open >= connections) return 'client_connections';
    this.open.set(key, open + 1);
    this.admitted.set(id, key);
    return undefined;
  }

  /** The connection `id` closed (admitted or not). */
  release(id: string): void {
    const key = this.admitted.get(id);
    if (key === undefined) return;
    this.admitted.delete(id);
    const open = (this.open.get(key) ?? 1) - 1;
    if (open > 0) this.open.set(key, open);
    else this.open.delete(key);
  }

  /** Whether the address failed AUTH too often lately: its AUTH, and its connections, are refused. */
  authRefused(address: string): boolean {
    return (this.failures.get(clientKey(address))?.count ?? 0) >= this.settings.authFailures.failures;
  }

  /** Counts a failed AUTH of the address; returns how long to wait before answering it. */
  authFailed(address: string): number {
    const key = clientKey(address);
    const memory = this.settings.authFailures;
    const count = (this.failures.get(key)?.count ?? 0) + 1;
    this.failures.set(key, { count }, count >= memory.failures ? { ttl: memory.refuseMs } : {});
    return Math.min((count - 1) * memory.delayStepMs, memory.maxDelayMs);
  }
}
