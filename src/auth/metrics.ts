import { Counter, type Registry } from 'prom-client';

/** The auth service's own metric (SEED-SPEC "Metrics", component A); the HTTP ones come from the kernel. */
export function createAuthMetrics(registry: Registry) {
  return {
    smsSent: new Counter({ name: 'sent_sms_messages_total', help: 'SMS messages the provider accepted (codes to sign in or to confirm a new number)', registers: [registry] }),
  };
}

export type AuthMetrics = ReturnType<typeof createAuthMetrics>;
