import type { SMTPServerOptions } from 'smtp-server';

/** What the benchmarks' bare smtp-servers share: no TLS, no AUTH, no lookups, no log, room for every client. */
export const BARE_SMTP_OPTIONS = {
  disableReverseLookup: true,
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  size: 64 * 1024 * 1024,
  maxClients: 10_000,
} satisfies SMTPServerOptions;
