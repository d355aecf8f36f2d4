import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The auth service's own metrics. `sent_sms_messages_total` is a fixed name (docs/specification.md#metrics);
 * the others are for operators (deploy/grafana, deploy/prometheus/alerts.yml); the HTTP ones come from the
 * kernel.
 */
export function createAuthMetrics(registry: Registry) {
  const registers = [registry];
  return {
    smsSent: new Counter({
      name: 'sent_sms_messages_total',
      help: 'SMS messages the provider accepted (codes to sign in or to confirm a new number)',
      registers,
    }),
    codesSent: new Counter({
      name: 'auth_codes_sent_total',
      help: 'One-time codes handed to the SMS provider or the mailer, by method (sms, email) and provider',
      labelNames: ['method', 'provider'] as const,
      registers,
    }),
    codesFailed: new Counter({
      name: 'auth_codes_failed_total',
      help: 'One-time codes the SMS provider or the mailer did not take, by method and provider',
      labelNames: ['method', 'provider'] as const,
      registers,
    }),
    signIns: new Counter({
      name: 'auth_sign_ins_total',
      help: 'Code checks at sign-in by outcome: signed_in, incorrect_code, expired_code, code_attempts_exceeded',
      labelNames: ['outcome'] as const,
      registers,
    }),
    attachmentsScanned: new Counter({
      name: 'auth_attachments_scanned_total',
      help:
        'Reply attachments sent to clamd, by verdict: clean, infected, ' +
        'too_large (refused by its size limit), failed (not scanned)',
      labelNames: ['verdict'] as const,
      registers,
    }),
    sessionLookups: new Counter({
      name: 'auth_session_cache_lookups_total',
      help:
        'Session lookups by result: hit (from the cache), miss (read and kept), ' +
        'bypass (read from PostgreSQL while changes are not heard)',
      labelNames: ['result'] as const,
      registers,
    }),
    sessionCacheServing: new Gauge({
      name: 'auth_session_cache_serving',
      help: '1 while the session cache hears changes (LISTEN) and serves; 0 while every lookup reads PostgreSQL',
      registers,
    }),
  };
}

export type AuthMetrics = ReturnType<typeof createAuthMetrics>;
