import { sql, type Kysely } from 'kysely';
import { Gauge, type Registry } from 'prom-client';
import { type Clock, systemClock } from '../../kernel/clock.ts';
import { cachedFor } from '../../kernel/metrics.ts';
import type { EnvelopeStatus, ExchangeTables } from '../tables.ts';

/** Statuses of an envelope still on its way, or held (the rows of delivered and failed ones are about to go). */
const WAITING: EnvelopeStatus[] = ['accepted', 'routed', 'delivering', 'retrying', 'held'];

export interface QueueSummary {
  status: EnvelopeStatus;
  count: number;
  /** Age of the oldest envelope in this status, in seconds. */
  oldestAgeSeconds: number;
}

/** The lower bound of each qshape age bucket, in minutes: 0, 5, 10, 20, … 1280 (the last open-ended). */
export const SHAPE_BUCKETS = [0, 5, 10, 20, 40, 80, 160, 320, 640, 1280];

export interface QueueShape {
  by: 'recipient' | 'sender';
  bucketsMinutes: number[];
  total: { total: number; counts: number[] };
  domains: Array<{ domain: string; total: number; counts: number[] }>;
}

export interface QueuedEnvelope {
  id: string;
  status: EnvelopeStatus;
  channel: string;
  sender: string;
  recipients: string[];
  size: number;
  attempts: number;
  ageSeconds: number;
  nextAttemptAt: string;
  lastError: string | null;
}

/**
 * The queue as an operator sees it (Postfix's mailq and qshape): envelopes by status with the age of
 * the oldest, and the waiting envelopes themselves, oldest first. The envelopes table only holds mail
 * not yet delivered (rows go once a message is delivered or has failed), so it is the queue itself.
 */
export class QueueView {
  constructor(
    private readonly db: Kysely<ExchangeTables>,
    private readonly clock: Clock = systemClock,
  ) {}

  async summary(): Promise<QueueSummary[]> {
    const rows = await this.db
      .selectFrom('envelopes')
      .select((eb) => [
        'status',
        eb.fn.countAll<string>().as('count'),
        sql<number>`extract(epoch from ${new Date(this.clock.now())}::timestamptz - min(created_at))`.as('oldest'),
      ])
      .groupBy('status')
      .execute();
    return rows.map((row) => ({
      status: row.status,
      count: Number(row.count),
      oldestAgeSeconds: Math.max(0, Number(row.oldest)),
    }));
  }

  async waiting(limit: number): Promise<QueuedEnvelope[]> {
    const rows = await this.db
      .selectFrom('envelopes')
      .select([
        'id',
        'status',
        'channel',
        'sender',
        'recipients',
        'size',
        'attempts',
        'next_attempt_at',
        'last_error',
        'created_at',
      ])
      .where('status', 'in', WAITING)
      .orderBy('created_at')
      .limit(limit)
      .execute();
    const now = this.clock.now();
    return rows.map((row) => ({
      id: row.id,
      status: row.status,
      channel: row.channel,
      sender: row.sender,
      recipients: row.recipients,
      size: Number(row.size),
      attempts: row.attempts,
      ageSeconds: Math.max(0, Math.round((now - row.created_at.getTime()) / 1000)),
      nextAttemptAt: row.next_attempt_at.toISOString(),
      lastError: row.last_error,
    }));
  }

  /**
   * Postfix's qshape: waiting recipients by destination domain (or envelope sender domain) and age, in
   * buckets of doubling width, 5 minutes first: a domain whose mail piles up in the old buckets is the one
   * that does not take it. Counted per recipient, as qshape does; the biggest domains first.
   */
  async shape(options: { by: 'recipient' | 'sender'; status?: EnvelopeStatus; top: number }): Promise<QueueShape> {
    const now = new Date(this.clock.now());
    const domain =
      options.by === 'sender'
        ? sql<string>`case when sender = '' then '<>' else lower(split_part(sender, '@', 2)) end`
        : sql<string>`lower(split_part(r.address, '@', 2))`;
    const minutes = sql<number>`extract(epoch from ${now}::timestamptz - created_at) / 60`;
    const bucket = sql<number>`case when ${minutes} < ${SHAPE_BUCKETS[1]} then 0
      else least(${SHAPE_BUCKETS.length - 1},
                 floor(log(2.0, (${minutes})::numeric / ${SHAPE_BUCKETS[1]}))::int + 1) end`;
    const rows = await this.db
      .selectFrom('envelopes')
      .innerJoin(sql<{ address: string }>`unnest(${sql.ref('recipients')})`.as<'r'>(sql`r(address)`), (join) =>
        join.onTrue(),
      )
      .select([domain.as('domain'), bucket.as('bucket'), sql<string>`count(*)`.as('count')])
      .where('status', 'in', options.status ? [options.status] : WAITING)
      .groupBy([sql`1`, sql`2`])
      .execute();
    const byDomain = new Map<string, number[]>();
    for (const row of rows) {
      const counts = byDomain.get(row.domain) ?? SHAPE_BUCKETS.map(() => 0);
      counts[Number(row.bucket)]! += Number(row.count);
      byDomain.set(row.domain, counts);
    }
    const domains = [...byDomain]
      .map(([name, counts]) => ({ domain: name, total: counts.reduce((a, b) => a + b, 0), counts }))
      .sort((a, b) => b.total - a.total || a.domain.localeCompare(b.domain));
    const total = SHAPE_BUCKETS.map((_, i) => domains.reduce((sum, row) => sum + row.counts[i]!, 0));
    return {
      by: options.by,
      bucketsMinutes: SHAPE_BUCKETS,
      total: { total: total.reduce((a, b) => a + b, 0), counts: total },
      domains: domains.slice(0, options.top),
    };
  }

  /**
   * `exchange_envelopes{status}` and `exchange_oldest_waiting_envelope_age_seconds`, read at scrape
   * time: one grouped query over the queue, cached for a few seconds so that frequent scrapes (or
   * several Prometheus servers) do not load the database.
   */
  registerMetrics(registry: Registry): void {
    const summary = cachedFor(() => this.summary());
    new Gauge({
      name: 'exchange_envelopes',
      help:
        'Envelopes in the queue by status (accepted, routed, delivering, ' +
        'retrying, held; delivered and failed ones until their row is removed)',
      labelNames: ['status'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const status of WAITING) this.set({ status }, 0);
        for (const row of await summary()) this.set({ status: row.status }, row.count);
      },
    });
    new Gauge({
      name: 'exchange_oldest_waiting_envelope_age_seconds',
      help: 'Age of the oldest envelope not yet delivered (0 when none waits)',
      registers: [registry],
      async collect() {
        // A held envelope waits on purpose: it must not raise the alert on the oldest waiting one.
        const waiting = (await summary()).filter((row) => WAITING.includes(row.status) && row.status !== 'held');
        this.set(waiting.length === 0 ? 0 : Math.max(...waiting.map((row) => row.oldestAgeSeconds)));
      },
    });
  }
}
