import type { SharedConfig } from '../../kernel/config.ts';
import type { ExchangeConfig } from '../config.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ExchangeMetrics } from '../metrics.ts';
import type { MessageIntake } from './accept.ts';
import { AUTH_FAILURE_MEMORY, type AuthFailureMemory, ClientLimits } from './client-limits.ts';
import { type InboundTls, loadInboundTls } from './smtp-tls.ts';
import { SubmissionPolicy } from './submission-policy.ts';

export interface InboundSmtpOptions {
  config: SharedConfig;
  settings: ExchangeConfig;
  intake: MessageIntake;
  /** The service's one metrics instance (smtp_incoming_*). */
  metrics: ExchangeMetrics;
  logger: Logger;
  /** How long close() waits for messages still being transferred before it cuts their connections. */
  drainTimeoutMs?: number;
  /** The AUTH failure memory's numbers (client-limits.ts; tests shorten them). */
  authFailureMemory?: AuthFailureMemory;
}

/** What the SMTP server's parts share: settings, the submission policy and TLS, as loaded at start. */
export interface SmtpDoor {
  config: SharedConfig;
  settings: ExchangeConfig;
  intake: MessageIntake;
  metrics: ExchangeMetrics;
  log: Logger;
  tls: InboundTls | undefined;
  policy: SubmissionPolicy;
  /** Whether AUTH is offered (after STARTTLS). */
  auth: boolean;
  /** Per-client connection count and rate, AUTH failures (Postfix's anvil). */
  clients: ClientLimits;
  drainTimeoutMs: number;
}

/** Reads the TLS files and the submission policy; fails before anything listens. */
export async function openSmtpDoor(options: InboundSmtpOptions): Promise<SmtpDoor> {
  const { config, settings, intake, metrics } = options;
  const log = options.logger.child({ component: 'smtp' });
  // Read before anything listens: bad PEM files stop start-up with a message naming the variable.
  const tls = loadInboundTls(settings.inboundSmtpTls);
  const policy = await SubmissionPolicy.load({
    allowedNetworks: settings.inboundSmtpAllowedNetworks,
    usersFile: settings.inboundSmtpUsersFile,
    senderDomains: settings.inboundSmtpSenderDomains,
  });
  // AUTH needs accounts, and TLS to protect their passwords: without either nothing is offered.
  const auth = policy.authEnabled && tls !== undefined;
  if (policy.authEnabled && !tls) {
    log.warn(
      'INBOUND_SMTP_USERS_FILE is set but INBOUND_SMTP_TLS is not: AUTH is only offered after STARTTLS, so it is off',
    );
  }
  if (policy.hashCosts.length > 1) {
    log.warn(
      { costs: policy.hashCosts },
      'INBOUND_SMTP_USERS_FILE has bcrypt hashes of different costs: a refusal of an account of a lower cost ' +
        'is quicker than of an unknown name, which tells that the name exists; write them all with one cost',
    );
  }
  const clients = new ClientLimits({
    connections: settings.inboundSmtpClientConnections,
    rate: settings.inboundSmtpClientRate,
    authFailures: options.authFailureMemory ?? AUTH_FAILURE_MEMORY,
  });
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
  return { config, settings, intake, metrics, log, tls, policy, auth, clients, drainTimeoutMs };
}
