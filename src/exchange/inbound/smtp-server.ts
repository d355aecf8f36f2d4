import { setTimeout as sleep } from 'node:timers/promises';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { listenError } from '../../kernel/listen-error.ts';
import { SmtpCommands } from './smtp-commands.ts';
import { shimConnection } from './smtp-connection-shims.ts';
import { type InboundSmtpOptions, openSmtpDoor, type SmtpDoor } from './smtp-door.ts';
import { receiveMessage } from './smtp-message.ts';
import { smtpServerOptions } from './smtp-options.ts';

export type { InboundSmtpOptions } from './smtp-door.ts';

export interface InboundSmtpServer {
  /** `smtp://host:port`, with the port actually bound. */
  url: string;
  /** Stops accepting connections, lets messages in transfer finish (up to the drain timeout), then
   * answers 421 to every connection left and closes it. */
  close(): Promise<void>;
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
 * connection over SMTP_MAX_CONNECTIONS `421 4.3.2`, one over the client's own limits `421 4.7.0`
 * (client-limits.ts), a message sent slower than INBOUND_SMTP_MIN_DATA_RATE `421 4.4.2`. Addresses:
 * smtp-server's own syntax check answers `501 5.1.7`/`501 5.1.3`; one that parses but does not normalise
 * (an address literal such as user@[10.0.0.1], a bad IDN domain) gets `553 5.1.3` from ours. A successful
 * DATA is answered `250 2.6.0 Ok: queued as <envelopeId>` (smtp-server's enhanced code for an accepted
 * message).
 */
export async function startInboundSmtpServer(options: InboundSmtpOptions): Promise<InboundSmtpServer> {
  const door = await openSmtpDoor(options);
  const transfers = new Transfers();
  const server = createSmtpServer(door, transfers);
  const url = await listen(server, door);
  logListening(door, url);
  let closing: Promise<void> | undefined;
  return {
    url,
    close() {
      closing ??= drainAndClose(server, door, transfers);
      return closing;
    },
  };
}

/** Transactions between DATA and their final reply; close() waits for them. */
class Transfers {
  private readonly inFlight = new Set<Promise<void>>();

  track(transaction: Promise<void>): void {
    this.inFlight.add(transaction);
    void transaction.finally(() => this.inFlight.delete(transaction));
  }

  current(): Promise<void>[] {
    return [...this.inFlight];
  }
}

function createSmtpServer(door: SmtpDoor, transfers: Transfers): SMTPServer {
  const commands = new SmtpCommands(door);
  const options = smtpServerOptions(door);
  const server: SMTPServer = new SMTPServer({
    ...options,
    onConnect(session, callback) {
      shimConnection(server, session, () => door.metrics.smtpRefused.inc({ reason: 'syntax' }));
      commands.connect(session, server.connections.size, callback);
    },
    onClose: (session) => commands.forget(session),
    onAuth: (credentials, session, callback) => commands.auth(credentials, session, callback),
    onMailFrom: (address, session, callback) => commands.mailFrom(address, session, callback),
    onRcptTo: (address, session, callback) => commands.rcptTo(address, session, callback),
    onData(stream, session, callback) {
      const recipients = commands.recipients(session);
      // smtp-server sends 354 once this returns, and the sender waits for it before sending the message:
      // the message's work (its Received header, the envelope's statement, the store's set-up) starts
      // after it, while the body is on its way (bench/RESULTS.md, "354 before the message's work").
      transfers.track(Promise.resolve().then(() => receiveMessage(door, stream, session, recipients, callback)));
    },
  });
  // smtp-server wraps its logger in nodemailer's, which copies each call's fields into a new object before
  // the level is even looked at: about a dozen calls per message, 15-20 µs of its CPU with nothing logged
  // at the info level. Ours (the options' logger) takes the same calls directly. Should smtp-server stop
  // reading this property, its wrapper around the same logger is used again: nothing is lost but the saving.
  (server as unknown as { logger: SMTPServerOptions['logger'] }).logger = options.logger;
  server.on('error', (error) => door.log.warn({ err: error }, 'SMTP connection error'));
  return server;
}

/** Binds SMTP_PORT on HOST; returns the server's `smtp://` URL with the port actually bound. */
async function listen(server: SMTPServer, door: SmtpDoor): Promise<string> {
  const { config, settings } = door;
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', (error) =>
      reject(listenError(error, { portVariable: 'INBOUND_SMTP_PORT', port: settings.smtpPort, host: config.host })),
    );
    server.listen(settings.smtpPort, config.host, () => {
      server.server.removeAllListeners('error');
      resolve();
    });
  });
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.smtpPort;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `smtp://${host}:${port}`;
}

function logListening(door: SmtpDoor, url: string): void {
  const { log, settings, tls, policy, auth } = door;
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
    log.warn(
      { validTo: tls.certificate.validTo, file: settings.inboundSmtpTls?.certPath },
      'the inbound SMTP TLS certificate has expired',
    );
  }
}

async function drainAndClose(server: SMTPServer, door: SmtpDoor, transfers: Transfers): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // From here smtp-server answers every new command 421; transfers under way may finish.
  const draining = transfers.current();
  if (draining.length > 0) {
    door.log.info({ messages: draining.length }, 'waiting for messages in transfer before closing SMTP');
    await Promise.race([Promise.all(draining), sleep(door.drainTimeoutMs, undefined, { ref: false })]);
  }
  for (const connection of server.connections) {
    connection.send(421, `${door.settings.smtpHostname} Service shutting down`);
  }
  await closed;
}
