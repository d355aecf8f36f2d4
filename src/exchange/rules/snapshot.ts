import type { Channel, Rule } from '../tables.ts';

/** More rules than this are not held: MAIL FROM then asks PostgreSQL as before. */
export const RULE_SNAPSHOT_MAX_RULES = 1000;

/** What the snapshot needs of a rule. */
export type RuleParams = Pick<Rule, 'channel' | 'sender'>;

/**
 * The delivery rules as they were a moment ago, for the early answer at MAIL FROM only. That answer
 * decides nothing for good: the statement that writes the envelope matches the rule again, in
 * PostgreSQL (envelope-writer.ts). So the snapshot may only say yes: when no rule of a fresh snapshot
 * applies, or there is no fresh snapshot, the caller asks PostgreSQL, and a sender is never refused on
 * an old picture. What an old picture can do is take the body of a message whose rule was deleted or
 * narrowed on another instance within its lifetime (SMTP_RULE_CACHE_TTL); the envelope's statement finds no rule
 * then, and the sender gets 451 after DATA instead of at MAIL FROM. Changes made through this instance
 * replace the snapshot at once (invalidate()).
 *
 * One lookup per MAIL FROM was a PostgreSQL round trip per message: without it the local-disk intake takes
 * 11-23 % more messages per second at 8 and 32 connections (bench/RESULTS.md, "MAIL FROM without a query").
 */
export class RuleSnapshot {
  /** The rules as read, each sender already as a key (lower case): no work per lookup beyond comparing. */
  private rules: ReadonlyArray<{ channel: Channel; key: string | null }> | undefined;
  private takenAt = Number.NEGATIVE_INFINITY;
  /** Bumped by invalidate(): a load that started before it must not install what it read. */
  private generation = 0;
  private loading = false;

  constructor(
    /** Up to RULE_SNAPSHOT_MAX_RULES + 1 rules, in any order. */
    private readonly load: () => Promise<RuleParams[]>,
    /** ttlMs: how long a snapshot answers (SMTP_RULE_CACHE_TTL); 0 holds none. */
    private readonly options: { ttlMs: number; now?: () => number; onError?: (error: unknown) => void },
  ) {}

  /**
   * True when a rule of a fresh snapshot applies to the channel and sender key (rules/match.ts semantics);
   * false means "ask PostgreSQL", not "no rule". A stale or missing snapshot is reloaded in the background.
   */
  applies(channel: Channel, key: string): boolean {
    const { ttlMs } = this.options;
    if (ttlMs === 0) return false;
    if (!this.rules || this.now() - this.takenAt >= ttlMs) {
      this.reload();
      return false;
    }
    // As ruleApplies() in match.ts. Where JavaScript's lower case and PostgreSQL's differ (some non-ASCII
    // letters), a miss asks PostgreSQL and a false hit only moves the refusal after DATA.
    return this.rules.some((rule) => rule.channel === channel && (rule.key === null || rule.key === key));
  }

  /** The rules changed: nothing read before this moment answers again. */
  invalidate(): void {
    this.generation += 1;
    this.rules = undefined;
  }

  private reload(): void {
    if (this.loading) return;
    this.loading = true;
    const generation = this.generation;
    const startedAt = this.now();
    this.load()
      .then((rules) => {
        if (generation !== this.generation) return;
        // Too many to hold: an empty snapshot, so that every lookup asks PostgreSQL until the next one.
        this.rules =
          rules.length <= RULE_SNAPSHOT_MAX_RULES
            ? rules.map((rule) => ({ channel: rule.channel, key: rule.sender?.toLowerCase() ?? null }))
            : [];
        // Its age counts from before the query: a change committed while it ran is at most that old.
        this.takenAt = startedAt;
      })
      .catch((error: unknown) => this.options.onError?.(error))
      .finally(() => {
        this.loading = false;
      });
  }

  private now(): number {
    return this.options.now ? this.options.now() : performance.now();
  }
}
