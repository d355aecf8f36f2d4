import { AppError } from '../../kernel/errors.ts';

/** An SMTP reply carried by an Error, the way smtp-server takes it from a handler. */
export type SmtpReply = Error & { responseCode: number };

export function smtpReply(code: number, message: string): SmtpReply {
  return Object.assign(new Error(message), { responseCode: code });
}

/** 499 as in nginx's "client closed request": nobody is left to answer, but accept() must see a failure. */
export function senderGone(): AppError {
  return new AppError(undefined, 499, 'The sender closed the connection before the end of the message');
}

/** A message cut off for INBOUND_SMTP_MIN_DATA_RATE: the client has been told (421 4.4.2) and is gone. */
export function sentTooSlowly(): AppError {
  return new AppError(undefined, 408, 'The client sent the message too slowly (INBOUND_SMTP_MIN_DATA_RATE)');
}

/**
 * The SMTP reply for a refused message. A message refused for what it says (400: a header the intake
 * refuses, expires-header.ts) is refused for good: 554 5.6.0 (RFC 3463, "other or undefined media error").
 * 503s (store down, no matching rule) are temporary: the sending server keeps the message and tries again.
 * Anything unexpected is temporary too — a message must never be lost, nor bounced, for our own fault — and
 * the log line has the details.
 */
export function replyFor(error: unknown): SmtpReply {
  // SIGN_IN_REQUIRE_SMS: refused for whom it is addressed to, naming them (sms-required.ts).
  if (error instanceof AppError && error.errorCode === 'mobile_required')
    return smtpReply(550, `5.7.1 ${error.message}`);
  if (error instanceof AppError && error.status === 400) return smtpReply(554, `5.6.0 ${error.message}`);
  if (error instanceof AppError && error.status === 413) return smtpReply(552, error.message);
  if (error instanceof AppError && error.status === 550) return smtpReply(550, `5.7.1 ${error.message}`);
  if (error instanceof AppError && error.status === 503) return smtpReply(451, error.message);
  if (error instanceof AppError && error.status === 499) return smtpReply(451, error.message);
  return smtpReply(451, 'Local error in processing; try again later');
}
