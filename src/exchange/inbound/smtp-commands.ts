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

/** AUTH, MAIL FROM and RCPT TO as the submission policy answers them, with what each connection remembers. */
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
  }

  auth(credentials: SMTPServerAuthentication, session: SMTPServerSession, callback: AuthDone): void {
    const { log, metrics, policy } = this.door;
    const failures = this.authFailures.get(session.id) ?? 0;
    const client = session.remoteAddress;
    if (failures >= 5) {
      log.warn({ client, user: credentials.username }, 'SMTP AUTH: too many failures on one connection, closing it');
      callback(smtpReply(421, '4.7.0 Too many failed authentication attempts; closing the connection'));
      return;
    }
    policy.authenticate(credentials.username ?? '', credentials.password ?? '').then(
      (ok) => {
        if (ok) {
          log.info({ client, user: credentials.username }, 'SMTP AUTH succeeded');
          return callback(null, { user: credentials.username });
        }
        this.authFailures.set(session.id, failures + 1);
        metrics.smtpRefused.inc({ reason: 'auth_failed' });
        // Never the password: the client and the name it tried are what an operator needs.
        log.warn({ client, user: credentials.username, failures: failures + 1 }, 'SMTP AUTH failed');
        callback(smtpReply(535, '5.7.8 Authentication credentials invalid'));
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
