import { randomUUID } from 'node:crypto';
import { finished } from 'node:stream';
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { AppError } from '../../kernel/errors.ts';
import type { Logger } from '../../kernel/logger.ts';
import { normalizedSender } from '../rules/match.ts';
import { watchDataRate } from './data-rate.ts';
import { expiresRefusal, expiresValues } from './expires-header.ts';
import { fromRefusal, watchHeaderSection } from './header-checks.ts';
import { receivedHeader } from './received-header.ts';
import { MessageSizeLimit } from './size-limit.ts';
import { hangUp } from './smtp-connection-shims.ts';
import type { SmtpDoor } from './smtp-door.ts';
import { replyFor, senderGone, sentTooSlowly } from './smtp-replies.ts';

/** smtp-server's DATA callback: no arguments for 250, an Error for a refusal. */
type Answer = (error?: Error | null, message?: string) => void;

/**
 * One message: count it, stream it through the size limit (with our Received header in front) into
 * accept(), answer. Resolves once the final reply is out (or the sender is gone).
 */
export function receiveMessage(
  door: SmtpDoor,
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  recipients: string[],
  callback: Answer,
): Promise<void> {
  const { settings, metrics, log } = door;
  metrics.smtpIncoming.inc();
  const stopTimer = metrics.smtpIncomingDuration.startTimer();
  const started = Date.now();
  const envelopeId = randomUUID();
  const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
  const sender = normalizedSender(mailFrom);
  const client = session.remoteAddress;

  const payload = new MessageSizeLimit(settings.smtpMaxMessageSize, {
    prefix: receivedHeader({ hostname: settings.smtpHostname, envelopeId, session, recipients }),
  });
  const discardRest = pipeData(door, stream, payload);
  const { settled, answer } = settleOnceAnswered(stream, payload, callback, stopTimer);
  const minRate = settings.inboundSmtpMinDataRate;
  if (minRate) {
    watchDataRate(stream, minRate, (received) => {
      metrics.smtpRefused.inc({ reason: 'slow_data' });
      log.warn(
        { envelopeId, client, received, periodMs: minRate.periodMs, bytes: stream.byteLength },
        'SMTP client sends its message slower than INBOUND_SMTP_MIN_DATA_RATE: connection cut, nothing kept',
      );
      // The upload fails first, so that nothing is stored; then the client is told and the message dropped.
      payload.destroy(sentTooSlowly());
      hangUp(
        session,
        421,
        `4.4.2 ${settings.smtpHostname} Error: the message arrives too slowly; closing the connection`,
      );
      stream.destroy();
    });
  }

  door.intake.accept({ channel: 'smtp', sender, recipients, payload, envelopeId, ...declaredEncoding(session) }).then(
    (accepted) => {
      metrics.smtpIncomingStored.inc();
      log.info(
        {
          envelopeId,
          sender: sender || '<>',
          recipients: recipients.length,
          size: accepted.size,
          outbound: accepted.outbound,
          client,
          tls: session.secure,
          ms: Date.now() - started,
        },
        'message accepted over SMTP',
      );
      answer(undefined, `Ok: queued as ${accepted.envelopeId}`);
    },
    (error: unknown) => {
      payload.destroy();
      discardRest();
      const reply = replyFor(error);
      const line = {
        envelopeId,
        sender: sender || '<>',
        recipients: recipients.length,
        client,
        reply: `${reply.responseCode} ${reply.message}`,
      };
      logRefusal(log, line, error);
      answer(reply);
    },
  );
  return settled;
}

/**
 * Streams DATA into the payload, with the checks of the header section: the From check when sender domains
 * are set, and X-Sealpost-Expires always. Returns what drops the rest of DATA once the upload has failed
 * (size limit, store down, no rule, a header refused): smtp-server can only answer after the final dot.
 */
function pipeData(door: SmtpDoor, stream: SMTPServerDataStream, payload: MessageSizeLimit): () => void {
  const { policy } = door;
  const discardRest = () => {
    stream.unpipe(payload);
    stream.resume();
  };
  payload.on('error', discardRest);
  watchHeaderSection(
    stream,
    (header) =>
      (policy.checksSenders ? fromRefusal(header, (address) => policy.isOwnSender(address)) : undefined) ??
      expiresRefusal(expiresValues(header), new Date()),
    (refusal) => payload.destroy(refusal),
  );
  stream.pipe(payload);
  return discardRest;
}

/**
 * smtp-server answers once the stream has ended and we have called back, whichever comes last;
 * the duration runs from DATA to that moment.
 */
function settleOnceAnswered(
  stream: SMTPServerDataStream,
  payload: MessageSizeLimit,
  callback: Answer,
  stopTimer: () => unknown,
): { settled: Promise<void>; answer: Answer } {
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
  const answer: Answer = (error, message) => {
    answered = true;
    callback(error, message);
    maybeSettle();
  };
  return { settled, answer };
}

/** RFC 6152 / RFC 6531: what the client declared is declared again to the relay. */
function declaredEncoding(session: SMTPServerSession): { body8bitmime: boolean; smtputf8: boolean } {
  const args = (session.envelope.mailFrom ? session.envelope.mailFrom.args : undefined) as
    | Record<string, string | boolean>
    | false
    | undefined;
  const body8bitmime = Boolean(args && String(args.BODY ?? '').toUpperCase() === '8BITMIME');
  const smtputf8 = Boolean(args && args.SMTPUTF8 === true);
  return { body8bitmime, smtputf8 };
}

function logRefusal(log: Logger, line: Record<string, unknown>, error: unknown): void {
  if (!(error instanceof AppError)) {
    log.error({ ...line, err: error }, 'message refused: unexpected error');
  } else if (error.status === 503) {
    // Store down or no rule: operators must see it; the store's own error is the useful detail.
    log.warn({ ...line, reason: error.message, ...(error.cause ? { err: error.cause } : {}) }, 'message refused');
  } else {
    log.info({ ...line, reason: error.message }, 'message refused');
  }
}
