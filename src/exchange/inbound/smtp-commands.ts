import type {
  SMTPServerAddress,
  SMTPServerAuthentication,
  SMTPServerAuthenticationResponse,
  SMTPServerSession,
} from 'smtp-server';
import { normalizeEmail } from '../../kernel/email.ts';
import type { SmtpDoor } from './smtp-door.ts';
import { hasParameter, mailParameters, RCPT_PARAMETERS, unadvertised, utf8Refusal } from './smtp-parameters.ts';
import { replyFor, smtpReply } from './smtp-replies.ts';

type Done = (error?: Error | null) => void;
type AuthDone = (error: Error | null | undefined, response?: SMTPServerAuthenticationResponse) => void;

/** The connection, AUTH, MAIL FROM and RCPT TO as the door's limits and policy answer them, with what each
 * connection remembers. */
export class SmtpCommands {
  /** Failed AUTH attempts per connection (smtp-server's session id). */
  private readonly authFailures = new Map<string, number>();
  /**
   * The current transaction's recipients as the client wrote them, per connection: smtp-server merges
   * RCPT TO addresses that differ only in case, but local parts are case-sensitive (RFC 5321 §2.4), so
   * <UPPER@dest.test> and <upper@dest.test> are two recipients. Reset by each MAIL FROM.
   */
  private readonly recipientsWritten = new Map<string, string[]>();

  constructor(private readonly door: SmtpDoor) {}

  /** The recipients of the connection's current transaction, as the client wrote them. */
  recipients(session: SMTPServerSession): string[] {
    return this.recipientsWritten.get(session.id) ?? [];
  }

  forget(session: SMTPServerSession): void {
    this.authFailures.delete(session.id);
    this.recipientsWritten.delete(session.id);
    this.door.clients.release(session.id);
  }

  /**
   * A new connection, `open` counting it: SMTP_MAX_CONNECTIONS for all clients together (`421 4.3.2`, the
   * system is full), then the client's own limits (`421 4.7.0`, in Postfix's words for anvil's refusals).
   */
  connect(session: SMTPServerSession, open: number, callback: Done): void {
    const { clients, log, metrics, policy, settings } = this.door;
    const client = session.remoteAddress;
    const host = settings.smtpHostname;
    if (open > settings.smtpMaxConnections) {
      metrics.smtpRefused.inc({ reason: 'max_connections' });
      log.warn({ client, max: settings.smtpMaxConnections }, 'SMTP_MAX_CONNECTIONS reached: connection refused');
      callback(smtpReply(421, `4.3.2 ${host} Too many connected clients, try again in a moment`));
      return;
    }
    const refusal = clients.admit(session.id, client, policy.isAllowedClient(client));
    if (!refusal) {
      callback();
      return;
    }
    metrics.smtpRefused.inc({ reason: refusal });
    const why = {
      client_connections: [
        `too many connections from ${client}`,
        'INBOUND_SMTP_CLIENT_CONNECTIONS reached: connection refused',
      ],
      client_rate: [`too many new connections from ${client}`, 'INBOUND_SMTP_CLIENT_RATE reached: connection refused'],
      auth_failures: [
        `too many failed authentication attempts from ${client}`,
        'client refused for its failed AUTH attempts: connection refused',
      ],
    }[refusal];
    log.info({ client }, why[1]);
    callback(smtpReply(421, `4.7.0 ${host} Error: ${why[0]}; try again later`));
  }

  /**
   * AUTH: at most 5 failures per connection (Postfix's smtpd_hard_error_limit), and the client's failures
   * across connections (client-limits.ts): each answered a little later, and past the limit the client's
   * AUTH, and its connections unless it is of the allowed networks, are refused with 421 4.7.0 for a while.
   */
  auth(credentials: SMTPServerAuthentication, session: SMTPServerSession, callback: AuthDone): void {
    const { clients, log, metrics, policy, settings } = this.door;
    const failures = this.authFailures.get(session.id) ?? 0;
    const client = session.remoteAddress;
    if (failures >= 5) {
      log.warn({ client, user: credentials.username }, 'SMTP AUTH: too many failures on one connection, closing it');
      callback(smtpReply(421, '4.7.0 Too many failed authentication attempts; closing the connection'));
      return;
    }
    if (clients.authRefused(client)) {
      metrics.smtpRefused.inc({ reason: 'auth_failures' });
      log.info({ client, user: credentials.username }, 'client refused for its failed AUTH attempts: AUTH refused');
      callback(
        smtpReply(
          421,
          `4.7.0 ${settings.smtpHostname} Error: too many failed authentication attempts from ${client}; ` +
            'try again later',
        ),
      );
      return;
    }
    policy.authenticate(credentials.username ?? '', credentials.password ?? '').then(
      (ok) => {
        if (ok) {
          log.info({ client, user: credentials.username }, 'SMTP AUTH succeeded');
          return callback(null, { user: credentials.username });
        }
        this.authFailures.set(session.id, failures + 1);
        const delay = clients.authFailed(client);
        metrics.smtpRefused.inc({ reason: 'auth_failed' });
        // Never the password: the client and the name it tried are what an operator needs.
        log.warn({ client, user: credentials.username, failures: failures + 1 }, 'SMTP AUTH failed');
        if (clients.authRefused(client)) {
          log.warn({ client }, 'SMTP client refused for a while: too many failed AUTH attempts');
        }
        setTimeout(() => callback(smtpReply(535, '5.7.8 Authentication credentials invalid')), delay);
      },
      (error: unknown) => callback(error as Error),
    );
  }

  mailFrom(address: SMTPServerAddress, session: SMTPServerSession, callback: Done): void {
    // Answered on the next turn of the event loop, never synchronously: smtp-server 3.21's
    // SMTPStream.continue() clears its continuation only after running it, so when the commands
    // pipelined after a message complete a second message inside that call, the second message's
    // continuation is wiped and the connection stops answering (found by test/fuzz/smtp-commands).
    // Every further message starts with MAIL FROM, so deferring this answer keeps them out of that call.
    setImmediate(() => {
      void this.checkMailFrom(address, session).then(
        () => {
          this.recipientsWritten.set(session.id, []);
          callback();
        },
        (error: Error) => callback(error),
      );
    });
  }

  rcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: Done): void {
    const smtputf8 = session.envelope.mailFrom ? hasParameter(session.envelope.mailFrom, 'SMTPUTF8') : false;
    const refusal = unadvertised(address, RCPT_PARAMETERS) ?? utf8Refusal(address.address, smtputf8);
    if (refusal) {
      callback(refusal);
      return;
    }
    // RFC 5321 §4.5.1: <postmaster> without a domain must be accepted; it is this host's postmaster.
    if (/^postmaster$/i.test(address.address)) address.address = `postmaster@${this.door.settings.smtpHostname}`;
    const recipient = normalizeEmail(address.address);
    if (recipient) {
      const written = this.recipientsWritten.get(session.id) ?? [];
      if (!written.includes(recipient)) written.push(recipient);
      this.recipientsWritten.set(session.id, written);
      callback();
      return;
    }
    this.door.metrics.smtpRefused.inc({ reason: 'invalid_address' });
    callback(smtpReply(553, `Recipient address <${address.address}> is not a valid email address`));
  }

  /**
   * MAIL FROM, in the order Postfix's restrictions run: parameters, then who may submit (the allowed
   * networks or an authenticated client: 530 5.7.0 otherwise, before anything is stored or matched),
   * then the address itself, the sender domains, and the delivery rule ("no rule" is 451 4.3.0 here,
   * before the body is sent; the 250 after DATA still waits until payload and envelope are durable).
   */
  private async checkMailFrom(address: SMTPServerAddress, session: SMTPServerSession): Promise<void> {
    const { log, metrics, policy } = this.door;
    const refusal = unadvertised(address, mailParameters(session.secure && this.door.auth));
    if (refusal) throw refusal;
    const client = session.remoteAddress;
    if (!session.user && !policy.isAllowedClient(client)) {
      metrics.smtpRefused.inc({ reason: 'not_allowed' });
      log.warn(
        { client, sender: address.address || '<>' },
        'SMTP client outside INBOUND_SMTP_ALLOWED_NETWORKS and not authenticated: refused',
      );
      throw smtpReply(530, '5.7.0 Authentication required');
    }
    const utf8 = utf8Refusal(address.address, hasParameter(address, 'SMTPUTF8'));
    if (utf8) throw utf8;
    // `<>` is the null sender of bounces and other notifications (RFC 5321 §4.5.5): always accepted.
    if (address.address === '') return this.checkRoute('');
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
    return this.checkRoute(sender);
  }

  private async checkRoute(sender: string): Promise<void> {
    try {
      await this.door.intake.checkRoute('smtp', sender);
    } catch (error) {
      throw replyFor(error);
    }
  }
}
