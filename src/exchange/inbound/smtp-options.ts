import type { SMTPServerOptions } from 'smtp-server';
import type { Logger } from '../../kernel/logger.ts';
import type { SmtpDoor } from './smtp-door.ts';

/** smtp-server's options apart from the handlers: what is advertised, TLS and AUTH, the limits, logging. */
export function smtpServerOptions(door: SmtpDoor): SMTPServerOptions {
  const { settings, tls, auth, drainTimeoutMs } = door;
  return {
    name: settings.smtpHostname,
    banner: 'Sealpost',
    size: settings.smtpMaxMessageSize,
    // Our own counter fails the upload as soon as the limit is passed; this makes smtp-server answer
    // 552 5.3.4 for such a message whatever else went wrong with it.
    rejectOversized: true,
    hidePIPELINING: false,
    hide8BITMIME: false,
    hideSMTPUTF8: false,
    hideENHANCEDSTATUSCODES: false,
    // Who may submit is decided at MAIL FROM (smtp-commands.ts): clients of the allowed networks, or
    // authenticated ones. AUTH (PLAIN, LOGIN) is offered only with accounts and only after STARTTLS
    // (smtp-connection-shims.ts); without TLS files STARTTLS is disabled rather than hidden, so
    // smtp-server never falls back to its built-in, public test key.
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: true,
    allowInsecureAuth: false,
    disabledCommands: tls ? (auth ? [] : ['AUTH']) : ['AUTH', 'STARTTLS'],
    // Sealpost does not implement DSN (NOTIFY, RET, ENVID, ORCPT): not advertised, so those parameters are refused.
    hideDSN: true,
    // Nor RFC 8689 (smtp-parameters.ts): REQUIRETLS is neither advertised nor taken.
    hideREQUIRETLS: true,
    ...(tls ? { key: tls.key, cert: tls.cert } : {}),
    disableReverseLookup: !settings.smtpReverseLookup,
    // SMTP_MAX_CONNECTIONS is checked with the per-client limits at connect (SmtpCommands.connect):
    // smtp-server's own maxClients answers 421 without an enhanced status code, and has no option for one.
    maxRecipients: settings.smtpMaxRecipients,
    // A backstop only: close() cuts the connections itself once the transfers are done.
    closeTimeout: drainTimeoutMs + 1_000,
    logger: smtpServerLogger(door.log),
  };
}

/**
 * smtp-server logs every connection at info level; that detail belongs at debug (our own line per
 * message is the info-level record), and a client's broken connection is a warning, not our error.
 * smtp-server.ts puts it in place of the wrapper smtp-server builds around it (see there).
 */
function smtpServerLogger(log: Logger) {
  const child = log.child({ component: 'smtp-server' });
  const at =
    (level: 'trace' | 'debug' | 'warn' | 'error') =>
    (...args: unknown[]) =>
      (child[level] as (...a: unknown[]) => void).apply(child, args);
  return {
    trace: at('trace'),
    debug: at('trace'),
    info: at('debug'),
    warn: at('warn'),
    error: at('warn'),
    fatal: at('error'),
  };
}
