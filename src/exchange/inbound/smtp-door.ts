import type { SharedConfig } from '../../kernel/config.ts';
import type { ExchangeConfig } from '../config.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ExchangeMetrics } from '../metrics.ts';
import type { MessageIntake } from './accept.ts';
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
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
  return { config, settings, intake, metrics, log, tls, policy, auth, drainTimeoutMs };
}
