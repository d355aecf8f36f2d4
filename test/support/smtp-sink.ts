import { once } from 'node:events';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

export interface SinkMessage {
  /** MAIL FROM; '' for the null sender <>. */
  from: string;
  to: string[];
  raw: Buffer;
  /** The Message-ID header, if any. */
  messageId: string | undefined;
  /** Date.now() when the sink accepted it. */
  receivedAt: number;
  /** The MAIL FROM parameters (BODY=8BITMIME, SMTPUTF8, ...) as the client gave them. */
  mailFromArgs: Record<string, string | boolean>;
  /** The name the client gave in EHLO or HELO. */
  helo: string;
}

export interface SmtpSinkOptions {
  /**
   * The reply code to refuse a recipient with at RCPT TO (4xx or 5xx), or undefined to accept it.
   * Settable later through `sink.failWith`.
   */
  failWith?: (recipient: string, session: SMTPServerSession) => number | undefined;
  /**
   * A reply to refuse a message with at the end of DATA (e.g. `{code: 554, text: '5.7.1 refused as
   * spam'}`), after the whole message was read; undefined accepts it. Settable later through
   * `sink.refuseData`. A refused message is not kept.
   */
  refuseData?: (message: SinkMessage, session: SMTPServerSession) => { code: number; text: string } | undefined;
  /** Leaves 8BITMIME out of the EHLO answer, as an old relay would. */
  hide8BITMIME?: boolean;
  /** Leaves SMTPUTF8 out of the EHLO answer. */
  hideSMTPUTF8?: boolean;
}

export interface SmtpSink {
  port: number;
  /** For OUTBOUND_SMTP_URL. */
  url: string;
  /** Messages accepted (answered 250 after DATA), in order. */
  messages: SinkMessage[];
  failWith: SmtpSinkOptions['failWith'];
  refuseData: SmtpSinkOptions['refuseData'];
  /** From now on, each DATA is read in full and then held without an answer until release(). */
  hold(): void;
  /** Answers every held DATA (250) and stops holding. */
  release(): void;
  /** DATA transfers received and waiting for their answer right now, from clients still connected. */
  readonly held: number;
  /** Resolves once `check()` is true; rejects after `timeoutMs`. */
  waitUntil(check: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real SMTP server on 127.0.0.1 that keeps what it receives (envelope and raw bytes), for delivery
 * tests. It can refuse recipients with a chosen code, refuse messages at the end of DATA, and hold DATA
 * open to keep deliveries in flight (to kill a sender mid-delivery). A message whose client went away before its
 * answer is not kept: the sender never heard "250", so for it the message was not delivered.
 */
export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: SinkMessage[] = [];
  const closedSessions = new Set<string>();
  let holding = false;
  const heldAnswers = new Map<() => void, string>();

  const server = new SMTPServer({
    disableReverseLookup: true,
    authOptional: true,
    // No STARTTLS: nodemailer would upgrade opportunistically and refuse the sink's self-signed certificate.
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 64 * 1024 * 1024,
    closeTimeout: 500,
    hide8BITMIME: options.hide8BITMIME ?? false,
    hideSMTPUTF8: options.hideSMTPUTF8 ?? false,
    onRcptTo(address, session, callback) {
      const code = sink.failWith?.(address.address, session);
      if (code === undefined) return callback();
      const text = code >= 500 ? '5.1.1 mailbox unavailable' : '4.2.0 try again later';
      callback(Object.assign(new Error(text), { responseCode: code }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const accept = () => {
          if (closedSessions.has(session.id)) return callback(new Error('gone'));
          const raw = Buffer.concat(chunks);
          const message: SinkMessage = {
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
            receivedAt: Date.now(),
            mailFromArgs: (session.envelope.mailFrom ? session.envelope.mailFrom.args : undefined) || {},
            helo: session.hostNameAppearsAs,
            messageId: /^message-id:\s*(\S+)/im.exec(
              raw.subarray(0, raw.indexOf('\r\n\r\n') + 2 || undefined).toString(),
            )?.[1],
          };
          const refusal = sink.refuseData?.(message, session);
          if (refusal) return callback(Object.assign(new Error(refusal.text), { responseCode: refusal.code }));
          messages.push(message);
          callback(null, 'Ok: queued');
        };
        if (!holding) return accept();
        const answer = () => {
          heldAnswers.delete(answer);
          accept();
        };
        heldAnswers.set(answer, session.id);
      });
    },
    onClose(session) {
      closedSessions.add(session.id);
    },
  });
  server.on('error', () => {});
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  const sink: SmtpSink = {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    failWith: options.failWith,
    refuseData: options.refuseData,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const answer of [...heldAnswers.keys()]) answer();
    },
    get held() {
      return [...heldAnswers.values()].filter((id) => !closedSessions.has(id)).length;
    },
    async waitUntil(check, timeoutMs = 20_000, what = 'condition') {
      const deadline = Date.now() + timeoutMs;
      while (!check()) {
        if (Date.now() > deadline)
          throw new Error(
            `SMTP sink: ${what} not reached within ${timeoutMs} ms (${messages.length} messages received)`,
          );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close() {
      sink.release();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return sink;
}
