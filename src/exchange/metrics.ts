import { Counter, Histogram, type Registry } from 'prom-client';

/** The exchange engine's metrics, with their fixed names (docs/specification.md#metrics). */
export function createExchangeMetrics(registry: Registry) {
  const registers = [registry];
  return {
    smtpIncoming: new Counter({
      name: 'smtp_incoming_total',
      help: 'Messages offered over SMTP (DATA started)',
      registers,
    }),
    smtpIncomingStored: new Counter({
      name: 'smtp_incoming_stored',
      help: 'Messages received over SMTP and stored durably (answered 250)',
      registers,
    }),
    smtpIncomingDuration: new Histogram({
      name: 'smtp_incoming_duration_seconds',
      help: 'Time from DATA to the final reply of an inbound SMTP message',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    delivered: new Counter({
      name: 'delivered_messages_total',
      help: 'Messages delivered, by outbound strategy',
      labelNames: ['strategy'] as const,
      registers,
    }),
    deliveredBytes: new Counter({
      name: 'delivered_messages_total_size_bytes',
      help: 'Bytes of the messages delivered, by outbound strategy',
      labelNames: ['strategy'] as const,
      registers,
    }),
    failed: new Counter({
      name: 'failed_messages_total',
      help: 'Messages that failed for good (retries exhausted or permanent error)',
      registers,
    }),
    bounces: new Counter({
      name: 'bounce_replies_total',
      help: 'Bounces (delivery status notifications) generated for failed messages',
      registers,
    }),
    // Not the spec's: a bounce of ours that could not be delivered either (Postfix's double bounce).
    bounceNotices: new Counter({
      name: 'bounce_notices_total',
      help:
        'Undeliverable bounces, by outcome: queued (a notice to BOUNCE_NOTICE_RECIPIENT) or ' +
        'dropped (the notice itself failed: only logged)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    // Not the spec's: for operators (deploy/prometheus/alerts.yml), beside smtp_incoming_*.
    smtpRefused: new Counter({
      name: 'smtp_refused_total',
      help:
        'SMTP connections and commands refused with a permanent or policy reply, by reason (invalid_address, ' +
        'syntax (501), auth_failed, max_connections, client_connections, client_rate, auth_failures, slow_data, ...)',
      labelNames: ['reason'] as const,
      registers,
    }),
    // Not the spec's: messages SIGN_IN_REQUIRE_SMS refused, so that an operator sees the directory falling short.
    mobileRequired: new Counter({
      name: 'exchange_mobile_required_total',
      help: 'Messages refused at intake under SIGN_IN_REQUIRE_SMS (a recipient without a mobile number), by channel',
      labelNames: ['channel'] as const,
      registers,
    }),
  };
}

export type ExchangeMetrics = ReturnType<typeof createExchangeMetrics>;
