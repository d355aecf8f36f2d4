import { randomUUID } from 'node:crypto';
import { finished } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../../kernel/config.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { AppError } from '../../kernel/errors.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ExchangeMetrics } from '../metrics.ts';
import { normalizedSender } from '../rules/match.ts';
import type { MessageIntake } from './accept.ts';
import { watchFromHeader } from './from-header-check.ts';
import { receivedHeader } from './received-header.ts';
import { MessageSizeLimit } from './size-limit.ts';
import { listenError } from '../../kernel/listen-error.ts';
import { shimConnection } from './smtp-connection-shims.ts';
import { loadInboundTls } from './smtp-tls.ts';
import { SubmissionPolicy } from './submission-policy.ts';

export interface InboundSmtpOptions {
  config: Config;
  intake: MessageIntake;
  /** The service's one metrics instance (smtp_incoming_*). */
  metrics: ExchangeMetrics;
  logger: Logger;
  /** How long close() waits for messages still being transferred before it cuts their connections. */
  drainTimeoutMs?: number;
}

export interface InboundSmtpServer {
  /** `smtp://host:port`, with the port actually bound. */
  url: string;
  /** Stops accepting connections, lets messages in transfer finish (up to the drain timeout), then
   * answers 421 to every connection left and closes it. */
  close(): Promise<void>;
}

/**
 * MAIL and RCPT parameters Sealpost advertises (RFC 5321 §4.1.1.11: others get 555 5.5.4): SIZE,
 * BODY (8BITMIME), SMTPUTF8; after STARTTLS REQUIRETLS, and with AUTH the AUTH= parameter (RFC 4954).
 * DSN is not offered, so RET, ENVID, NOTIFY and ORCPT are refused.
 */
const MAIL_PARAMETERS = new Set(['SIZE', 'BODY', 'SMTPUTF8']);
const MAIL_PARAMETERS_TLS = new Set([...MAIL_PARAMETERS, 'REQUIRETLS']);
const MAIL_PARAMETERS_TLS_AUTH = new Set([...MAIL_PARAMETERS_TLS, 'AUTH']);
const RCPT_PARAMETERS = new Set<string>();

function unadvertised(address: SMTPServerAddress, allowed: Set<string>): (Error & { responseCode: number }) | undefined {
  const unknown = Object.keys(address.args || {}).find((name) => !allowed.has(name.toUpperCase()));
  return unknown === undefined ? undefined : smtpReply(555, `5.5.4 Parameter ${unknown} is not supported here`);
}

function hasParameter(address: SMTPServerAddress, name: string): boolean {
  return Object.entries(address.args || {}).some(([key, value]) => key.toUpperCase() === name && value === true);
}

/** RFC 6531 §3.4: a non-ASCII address needs the SMTPUTF8 parameter on MAIL FROM. */
function utf8Refusal(address: string, smtputf8: boolean): (Error & { responseCode: number }) | undefined {
  return !smtputf8 && /[^\x00-\x7f]/.test(address) ? smtpReply(553, `5.6.7 The address <${address}> needs SMTPUTF8 (MAIL FROM:<...> SMTPUTF8)`) : undefined;
}

/** An SMTP reply carried by an Error, the way smtp-server takes it from a handler. */
function smtpReply(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

/**
 * The inbound SMTP server (docs/design.md#intake), a receiver in the manner of an MTA. Who may submit
 * is the SubmissionPolicy's (allowed networks, AUTH after STARTTLS, sender domains:
 * docs/operating.md#the-smtp-door); delivery rules decide what happens to what it takes.
 *
 * Each message streams from DATA through a size check into MessageIntake.accept (object store, then
 * the envelope row) and is answered 250 only once both are durable. Replies carry RFC 3463 enhanced
 * status codes (ENHANCEDSTATUSCODES is advertised): a store or rule problem is `451 4.3.0`, a message
 * over SMTP_MAX_MESSAGE_SIZE `552 5.3.4`, a recipient over SMTP_MAX_RECIPIENTS `452 4.5.3`, a
 * connection over SMTP_MAX_CONNECTIONS `421`. Addresses: smtp-server's own syntax check answers
 * `501 5.1.7`/`501 5.1.3`; one that parses but does not normalise (an address literal such as
 * user@[10.0.0.1], a bad IDN domain) gets `553 5.1.3` from ours. A successful DATA is answered
 * `250 2.6.0 Ok: queued as <envelopeId>` (smtp-server's enhanced code for an accepted message).
 */
export async function startInboundSmtpServer(options: InboundSmtpOptions): Promise<InboundSmtpServer> {
  const { config, intake, metrics } = options;
  const settings = config.exchange;
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
  if (policy.authEnabled && !tls) log.warn('INBOUND_SMTP_USERS_FILE is set but INBOUND_SMTP_TLS is not: AUTH is only offered after STARTTLS, so it is off');
  /** Failed AUTH attempts per connection (smtp-server's session id). */
  const authFailures = new Map<string, number>();
  /**
   * The current transaction's recipients as the client wrote them, per connection: smtp-server merges
   * RCPT TO addresses that differ only in case, but local parts are case-sensitive (RFC 5321 §2.4), so
   * <UPPER@dest.test> and <upper@dest.test> are two recipients. Reset by each MAIL FROM.
   */
  const recipientsWritten = new Map<string, string[]>();
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
  /** Transactions between DATA and their final reply; close() waits for them. */
  const inFlight = new Set<Promise<void>>();

  const server = new SMTPServer({
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
    // Who may submit is decided at MAIL FROM (onMailFrom below): clients of the allowed networks, or
    // authenticated ones. AUTH (PLAIN, LOGIN) is offered only with accounts and only after STARTTLS
    // (smtp-connection-shims.ts); without TLS files STARTTLS is disabled rather than hidden, so
    // smtp-server never falls back to its built-in, public test key.
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: true,
    allowInsecureAuth: false,
    disabledCommands: tls ? (auth ? [] : ['AUTH']) : ['AUTH', 'STARTTLS'],
    // Sealpost does not implement DSN (NOTIFY, RET, ENVID, ORCPT): not advertised, so those parameters are refused.
    hideDSN: true,
    ...(tls ? { key: tls.key, cert: tls.cert } : {}),
    disableReverseLookup: !settings.smtpReverseLookup,
    maxClients: settings.smtpMaxConnections,
    maxRecipients: settings.smtpMaxRecipients,
    // A backstop only: close() below cuts the connections itself once the transfers are done.
    closeTimeout: drainTimeoutMs + 1_000,
    logger: smtpServerLogger(log),

    onConnect(session, callback) {
      shimConnection(server, session);
      callback();
    },
    onClose(session) {
      authFailures.delete(session.id);
      recipientsWritten.delete(session.id);
    },
    onAuth(credentials, session, callback) {
      const failures = authFailures.get(session.id) ?? 0;
      const client = session.remoteAddress;
      if (failures >= 5) {
        log.warn({ client, user: credentials.username }, 'SMTP AUTH: too many failures on one connection, closing it');
        return callback(smtpReply(421, '4.7.0 Too many failed authentication attempts; closing the connection'));
      }
      policy.authenticate(credentials.username ?? '', credentials.password ?? '').then(
        (ok) => {
          if (ok) {
            log.info({ client, user: credentials.username }, 'SMTP AUTH succeeded');
            return callback(null, { user: credentials.username });
          }
          authFailures.set(session.id, failures + 1);
          metrics.smtpRefused.inc({ reason: 'auth_failed' });
          // Never the password: the client and the name it tried are what an operator needs.
          log.warn({ client, user: credentials.username, failures: failures + 1 }, 'SMTP AUTH failed');
          callback(smtpReply(535, '5.7.8 Authentication credentials invalid'));
        },
        (error: unknown) => callback(error as Error),
      );
    },
    onMailFrom(address, session, callback) {
      // Answered on the next turn of the event loop, never synchronously: smtp-server 3.21's
      // SMTPStream.continue() clears its continuation only after running it, so when the commands
      // pipelined after a message complete a second message inside that call, the second message's
      // continuation is wiped and the connection stops answering (found by test/fuzz/smtp-commands).
      // Every further message starts with MAIL FROM, so deferring this answer keeps them out of that call.
      setImmediate(() => {
        void mailFrom(address, session).then(
          () => {
            recipientsWritten.set(session.id, []);
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
    onRcptTo(address, session, callback) {
      const smtputf8 = session.envelope.mailFrom ? hasParameter(session.envelope.mailFrom, 'SMTPUTF8') : false;
      const refusal = unadvertised(address, RCPT_PARAMETERS) ?? utf8Refusal(address.address, smtputf8);
      if (refusal) return callback(refusal);
      // RFC 5321 §4.5.1: <postmaster> without a domain must be accepted; it is this host's postmaster.
      if (/^postmaster$/i.test(address.address)) address.address = `postmaster@${settings.smtpHostname}`;
      const recipient = normalizeEmail(address.address);
      if (recipient) {
        const written = recipientsWritten.get(session.id) ?? [];
        if (!written.includes(recipient)) written.push(recipient);
        recipientsWritten.set(session.id, written);
        return callback();
      }
      metrics.smtpRefused.inc({ reason: 'invalid_address' });
      callback(smtpReply(553, `Recipient address <${address.address}> is not a valid email address`));
    },
    onData(stream, session, callback) {
      const transaction = receive(stream, session, callback);
      inFlight.add(transaction);
      void transaction.finally(() => inFlight.delete(transaction));
    },
  });
  server.on('error', (error) => log.warn({ err: error }, 'SMTP connection error'));

  /**
   * MAIL FROM, in the order Postfix's restrictions run: parameters, then who may submit (the allowed
   * networks or an authenticated client: 530 5.7.0 otherwise, before anything is stored or matched),
   * then the address itself, the sender domains, and the delivery rule ("no rule" is 451 4.3.0 here,
   * before the body is sent; the 250 after DATA still waits until payload and envelope are durable).
   */
  async function mailFrom(address: SMTPServerAddress, session: SMTPServerSession): Promise<void> {
    const refusal = unadvertised(address, session.secure ? (auth ? MAIL_PARAMETERS_TLS_AUTH : MAIL_PARAMETERS_TLS) : MAIL_PARAMETERS);
    if (refusal) throw refusal;
    const client = session.remoteAddress;
    if (!session.user && !policy.isAllowedClient(client)) {
      metrics.smtpRefused.inc({ reason: 'not_allowed' });
      log.warn({ client, sender: address.address || '<>' }, 'SMTP client outside INBOUND_SMTP_ALLOWED_NETWORKS and not authenticated: refused');
      throw smtpReply(530, '5.7.0 Authentication required');
    }
    const utf8 = utf8Refusal(address.address, hasParameter(address, 'SMTPUTF8'));
    if (utf8) throw utf8;
    // `<>` is the null sender of bounces and other notifications (RFC 5321 §4.5.5): always accepted.
    if (address.address === '') return checkRoute('');
    const sender = normalizeEmail(address.address);
    if (!sender) {
      metrics.smtpRefused.inc({ reason: 'invalid_address' });
      throw smtpReply(553, `Sender address <${address.address}> is not a valid email address`);
    }
    if (!policy.isOwnSender(sender)) {
      metrics.smtpRefused.inc({ reason: 'sender_domain' });
      log.warn({ client, sender, user: session.user }, 'SMTP sender outside INBOUND_SMTP_SENDER_DOMAINS: refused');
      throw smtpReply(550, `5.7.1 Sender <${sender}> is not in a domain this server takes mail from`);
    }
    return checkRoute(sender);
  }

  async function checkRoute(sender: string): Promise<void> {
    try {
      await intake.checkRoute('smtp', sender);
    } catch (error) {
      throw replyFor(error);
    }
  }

  /**
   * One message: count it, stream it through the size limit (with our Received header in front) into
   * accept(), answer. Resolves once the final reply is out (or the sender is gone).
   */
  function receive(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    callback: (error?: Error | null, message?: string) => void,
  ): Promise<void> {
    metrics.smtpIncoming.inc();
    const stopTimer = metrics.smtpIncomingDuration.startTimer();
    const started = Date.now();
    const envelopeId = randomUUID();
    const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const sender = normalizedSender(mailFrom);
    const recipients = recipientsWritten.get(session.id) ?? [];
    const client = session.remoteAddress;

    const payload = new MessageSizeLimit(settings.smtpMaxMessageSize, {
      prefix: receivedHeader({ hostname: settings.smtpHostname, envelopeId, session, recipients }),
    });
    // Once the upload has failed (size limit, store down, no rule) the rest of DATA is read and dropped:
    // smtp-server can only answer after the final dot.
    const discardRest = () => {
      stream.unpipe(payload);
      stream.resume();
    };
    payload.on('error', discardRest);
    if (policy.checksSenders) watchFromHeader(stream, (address) => policy.isOwnSender(address), (refusal) => payload.destroy(refusal));
    stream.pipe(payload);

    // smtp-server answers once the stream has ended and we have called back, whichever comes last;
    // the duration runs from DATA to that moment.
    let streamDone = false;
    let answered = false;
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const maybeSettle = () => {
      if (!streamDone || !answered) return;
      stopTimer();
      settle();
    };
    finished(stream, (error) => {
      // The sender went away mid-message: fail the upload so that nothing is stored.
      if (error) payload.destroy(senderGone());
      streamDone = true;
      maybeSettle();
    });
    const answer = (error?: Error, message?: string) => {
      answered = true;
      callback(error, message);
      maybeSettle();
    };

    // RFC 6152 / RFC 6531: what the client declared is declared again to the relay.
    const args = (session.envelope.mailFrom ? session.envelope.mailFrom.args : undefined) as Record<string, string | boolean> | false | undefined;
    const body8bitmime = Boolean(args && String(args.BODY ?? '').toUpperCase() === '8BITMIME');
    const smtputf8 = Boolean(args && args.SMTPUTF8 === true);
    intake.accept({ channel: 'smtp', sender, recipients, payload, envelopeId, body8bitmime, smtputf8 }).then(
      (accepted) => {
        metrics.smtpIncomingStored.inc();
        log.info(
          { envelopeId, sender: sender || '<>', recipients: recipients.length, size: accepted.size, outbound: accepted.outbound, client, tls: session.secure, ms: Date.now() - started },
          'message accepted over SMTP',
        );
        answer(undefined, `Ok: queued as ${accepted.envelopeId}`);
      },
      (error: unknown) => {
        payload.destroy();
        discardRest();
        const reply = replyFor(error);
        const line = { envelopeId, sender: sender || '<>', recipients: recipients.length, client, reply: `${reply.responseCode} ${reply.message}` };
        if (!(error instanceof AppError)) {
          log.error({ ...line, err: error }, 'message refused: unexpected error');
        } else if (error.status === 503) {
          // Store down or no rule: operators must see it; the store's own error is the useful detail.
          log.warn({ ...line, reason: error.message, ...(error.cause ? { err: error.cause } : {}) }, 'message refused');
        } else {
          log.info({ ...line, reason: error.message }, 'message refused');
        }
        answer(reply);
      },
    );
    return settled;
  }

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', (error) => reject(listenError(error, { portVariable: 'INBOUND_SMTP_PORT', port: settings.smtpPort, host: config.host })));
    server.listen(settings.smtpPort, config.host, () => {
      server.server.removeAllListeners('error');
      resolve();
    });
  });
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.smtpPort;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `smtp://${host}:${port}`;
  log.info(
    {
      url,
      tls: tls ? { subject: tls.certificate.subject, validTo: tls.certificate.validTo } : false,
      maxMessageSize: settings.smtpMaxMessageSize,
      maxRecipients: settings.smtpMaxRecipients,
      maxConnections: settings.smtpMaxConnections,
      // Who may submit: the allowed networks without AUTH, others only with AUTH after STARTTLS.
      submission: { ...policy.describe(), auth },
    },
    'inbound SMTP server listening',
  );
  if (tls && Date.parse(tls.certificate.validTo) < Date.now()) {
    log.warn({ validTo: tls.certificate.validTo, file: settings.inboundSmtpTls?.certPath }, 'the inbound SMTP TLS certificate has expired');
  }

  let closing: Promise<void> | undefined;
  return {
    url,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // From here smtp-server answers every new command 421; transfers under way may finish.
        const draining = [...inFlight];
        if (draining.length > 0) {
          log.info({ messages: draining.length }, 'waiting for messages in transfer before closing SMTP');
          await Promise.race([Promise.all(draining), sleep(drainTimeoutMs, undefined, { ref: false })]);
        }
        for (const connection of server.connections) connection.send(421, `${settings.smtpHostname} Service shutting down`);
        await closed;
      })();
      return closing;
    },
  };
}

/** 499 as in nginx's "client closed request": nobody is left to answer, but accept() must see a failure. */
function senderGone(): AppError {
  return new AppError(undefined, 499, 'The sender closed the connection before the end of the message');
}

/**
 * The SMTP reply for a refused message. 503s (store down, no matching rule) are temporary: the sending
 * server keeps the message and tries again. Anything unexpected is temporary too — a message must never
 * be lost, nor bounced, for our own fault — and the log line has the details.
 */
function replyFor(error: unknown): Error & { responseCode: number } {
  if (error instanceof AppError && error.status === 413) return smtpReply(552, error.message);
  if (error instanceof AppError && error.status === 550) return smtpReply(550, `5.7.1 ${error.message}`);
  if (error instanceof AppError && error.status === 503) return smtpReply(451, error.message);
  if (error instanceof AppError && error.status === 499) return smtpReply(451, error.message);
  return smtpReply(451, 'Local error in processing; try again later');
}

/**
 * smtp-server logs every connection at info level; that detail belongs at debug (our own line per
 * message is the info-level record), and a client's broken connection is a warning, not our error.
 */
function smtpServerLogger(log: Logger) {
  const child = log.child({ component: 'smtp-server' });
  const at = (level: 'trace' | 'debug' | 'warn' | 'error') => (...args: unknown[]) =>
    (child[level] as (...a: unknown[]) => void).apply(child, args);
  return { trace: at('trace'), debug: at('trace'), info: at('debug'), warn: at('warn'), error: at('warn'), fatal: at('error') };
}
