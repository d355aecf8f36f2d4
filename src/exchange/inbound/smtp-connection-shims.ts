import type { Socket } from 'node:net';
import type { SMTPServer, SMTPServerAddress, SMTPServerSession } from 'smtp-server';
import { mailParameters, unadvertised } from './smtp-parameters.ts';

/**
 * smtp-server 3.21 has no option for five things Sealpost's SMTP door needs, so each is added to the
 * connection (its internal SMTPConnection) when a client connects. They lean on that class's method
 * names; submission.test.ts fails if an upgrade changes them.
 *
 * - Exact enhanced status codes (RFC 3463): smtp-server sends a handler's error with its default code
 *   for the reply code (550 → 5.1.1, 553 → 5.1.3). A message that starts with its own enhanced code
 *   (`5.7.1 …`) is sent with that code instead, so a refused sender can get 550 5.7.1. The refusals it
 *   sends without any code (EHLO syntax, a refused connection, a 421 after EHLO) get one too.
 * - AUTH only after STARTTLS (Postfix's smtpd_tls_auth_only): EHLO in clear does not offer it, and AUTH
 *   in clear is answered `538 5.7.11 Encryption required` (RFC 4954 §6) instead of smtp-server's 5.7.0.
 * - Quoted local parts with spaces (`<"quoted local"@example.org>`, RFC 5321 §4.1.2): smtp-server's
 *   address parser splits the command at whitespace first.
 * - Only advertised MAIL parameters (RFC 5321 §4.1.1.11): smtp-server checks the values of those it knows
 *   before our MAIL handler runs, and answers REQUIRETLS in clear with 530; an unadvertised one is
 *   555 5.5.4 first, before and after STARTTLS (smtp-parameters.ts).
 * - The replies to a pipelined group in one write (RFC 2920 §3.2, as Postfix's smtpd flushes only once its
 *   input is read): smtp-server writes each reply to the socket at once, so a client's MAIL FROM, RCPT TO
 *   and DATA sent together cost a write and a read each; the replies are held until the end of the event
 *   loop's turn, or until 354, and go out together.
 * - A 421 in the middle of DATA (hangUp), for a client that sends its message too slowly.
 * - Its parser's 501 refusals (a malformed MAIL FROM or RCPT TO, an EHLO without a name) are counted:
 *   they never reach a handler of ours.
 */
interface Connection {
  session: SMTPServerSession;
  _socket: Socket | undefined;
  secure: boolean;
  send(code: number, data?: string | string[], context?: string | false): void;
  handler_EHLO(command: Buffer, callback: () => void): void;
  handler_AUTH(command: Buffer, callback: () => void): void;
  _parseAddressCommand(name: string, command: Buffer | string): false | { address: string };
  _validateMailParams(parsed: Pick<SMTPServerAddress, 'args'>): { code: number; message: string } | null;
  _server: { options: { authMethods: string[]; disabledCommands: string[] } };
}

const OWN_ENHANCED_CODE = /^([245]\.\d{1,3}\.\d{1,3}) /;
/** RFC 3463 codes for the refusals smtp-server sends bare: 421 closing (4.3.2 system not accepting), 501 syntax. */
const FALLBACK_CODES: Record<number, string> = { 421: '4.3.2', 501: '5.5.4' };
/** The contexts in which smtp-server's send() adds no enhanced code (smtp-connection.js _getEnhancedStatusCode). */
const noCodeFor = (context: string | false | undefined) =>
  context === false || /^(EHLO|HELO|LHLO)$/i.test(context ?? '');
/** Stands in for the spaces of a quoted local part while smtp-server splits the command: not whitespace, not ASCII. */
const SPACE_STAND_IN = '\ue000';

/** Each connection by its session (the same object for the connection's life), for hangUp(). */
const connections = new WeakMap<SMTPServerSession, Connection>();

export function shimConnection(
  server: SMTPServer,
  session: SMTPServerSession,
  /** Called for each 501 (a command smtp-server's parser refused: our handlers never answer 501). */
  onSyntaxRefusal: () => void = () => {},
): void {
  const connection = [...(server as unknown as { connections: Set<Connection> }).connections].find(
    (c) => c.session === session,
  );
  if (!connection) throw new Error('smtp-server connection not found for its session (smtp-server internals changed?)');
  connections.set(session, connection);

  const send = coalescedReplies(connection);
  connection.send = (code, data, context) => {
    if (code === 501) onSyntaxRefusal();
    if (typeof data === 'string' && context !== false && OWN_ENHANCED_CODE.test(data)) return send(code, data, false);
    // Every refusal carries an enhanced code: smtp-server sends some without one (a bad EHLO argument, a
    // refused connection: context false; a 421 whose context is EHLO or HELO, which it skips).
    if (code >= 400 && typeof data === 'string' && !OWN_ENHANCED_CODE.test(data) && noCodeFor(context))
      return send(code, `${FALLBACK_CODES[code] ?? (code < 500 ? '4.0.0' : '5.0.0')} ${data}`, false);
    return send(code, data, context);
  };

  const ehlo = connection.handler_EHLO;
  connection.handler_EHLO = function (this: Connection, command, callback) {
    if (this.secure) return ehlo.call(this, command, callback);
    // handler_EHLO lists the features synchronously: AUTH is left out for this one call.
    const options = this._server.options;
    const methods = options.authMethods;
    options.authMethods = [];
    try {
      ehlo.call(this, command, callback);
    } finally {
      options.authMethods = methods;
    }
  };

  const auth = connection.handler_AUTH;
  connection.handler_AUTH = function (this: Connection, command, callback) {
    if (this.secure) return auth.call(this, command, callback);
    this.send(538, '5.7.11 Encryption required: STARTTLS first, then AUTH', false);
    callback();
  };

  const validateMail = connection._validateMailParams;
  connection._validateMailParams = function (this: Connection, parsed) {
    const authOffered = this.secure && !this._server.options.disabledCommands.includes('AUTH');
    const refusal = unadvertised(parsed, mailParameters(authOffered));
    if (refusal) return { code: refusal.responseCode, message: refusal.message };
    return validateMail.call(this, parsed);
  };

  const parse = connection._parseAddressCommand;
  connection._parseAddressCommand = function (this: Connection, name, command) {
    const text = (command ?? '')
      .toString()
      .replace(/<("(?:[^"\\]|\\.)*")@/, (_match, quoted: string) => `<${quoted.replaceAll(' ', SPACE_STAND_IN)}@`);
    const parsed = parse.call(this, name, text);
    if (parsed && typeof parsed.address === 'string') parsed.address = parsed.address.replaceAll(SPACE_STAND_IN, ' ');
    return parsed;
  };
}

/** Replies that go out together: held (corked) until the end of the event loop's turn that wrote the first. */
function coalescedReplies(connection: Connection): Connection['send'] {
  const send = connection.send.bind(connection);
  let held: Socket | undefined;
  const flush = () => {
    const socket = held;
    held = undefined;
    socket?.uncork();
  };
  return (code, data, context) => {
    // What comes before a change of the connection goes out at once, after what is held: the greeting
    // and STARTTLS's 220 (the TLS handshake follows on the same socket), 221 and 421 (the socket closes).
    if (code === 220 || code === 221 || code === 421) {
      flush();
    } else if (!held && connection._socket) {
      held = connection._socket;
      held.cork();
      setImmediate(flush);
    }
    send(code, data, context);
    // 354 ends a pipelined group (RFC 2920 §3.1: the client waits for it before it sends the message), so
    // no command is left to read: it goes out at once with what is held, as Postfix's smtpd flushes once its
    // input is read. Held to the end of the turn, it waited for the work the message starts in that turn.
    if (code === 354) flush();
  };
}

/**
 * Answers `code` (a 421: smtp-server then closes the connection) in the middle of anything, DATA included:
 * smtp-server's handlers can only answer a command, and a client stuck in DATA sends none.
 * `message` starts with its enhanced status code.
 */
export function hangUp(session: SMTPServerSession, code: 421, message: string): void {
  connections.get(session)?.send(code, message, false);
}
