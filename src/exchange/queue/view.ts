import { sql, type Kysely } from 'kysely';
import { Gauge, type Registry } from 'prom-client';
import { type Clock, systemClock } from '../../kernel/clock.ts';
import { cachedFor } from '../../kernel/metrics.ts';
import type { EnvelopeStatus, ExchangeTables } from '../tables.ts';

/** Statuses of an envelope still on its way (the rows of delivered and failed ones are about to go). */
const WAITING: EnvelopeStatus[] = ['accepted', 'routed', 'delivering', 'retrying'];

export interface QueueSummary {
  status: EnvelopeStatus;
  count: number;
  /** Age of the oldest envelope in this status, in seconds. */
  oldestAgeSeconds: number;
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
        'retrying; delivered and failed ones until their row is removed)',
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
        const waiting = (await summary()).filter((row) => WAITING.includes(row.status));
        this.set(waiting.length === 0 ? 0 : Math.max(...waiting.map((row) => row.oldestAgeSeconds)));
      },
    });
  }
}
