import { randomUUID } from 'node:crypto';
import type { ErrorCode } from './error-codes.ts';

export type { ErrorCode };

/**
 * The error object (docs/specification.md#error-object): `kind` is the HTTP status,
 * `id` is unique per occurrence and is written to the log line of the request that produced it.
 */
export interface ErrorObject {
  id: string;
  kind: number;
  errorCode?: string;
  message: string;
  /** incorrect_code, invalid_code_or_email: wrong tries left before the code is void. */
  attemptsLeft?: number;
  /**
   * sms_rate_limit: which limit was met, the shortest gap between two codes to one destination (`interval`) or a
   * count per hour (`hourly`).
   */
  limit?: 'interval' | 'hourly';
  /** seal_broken: the IPFS CID of the content that failed verification. */
  cid?: string;
  /** seal_broken, unavailable (seal service): each cluster's copy that could not be served, and why. */
  copies?: Array<{ cluster: string; state: 'damaged' | 'missing' | 'unreachable' }>;
  /** message_withdrawn, message_expired: when the message ended (RFC 3339). */
  endedAt?: string;
  /** message_withdrawn, message_expired: whom to ask about it (the sender's address). */
  contact?: string;
  /** A contacts import refused whole (allOrNothing): its bad rows (the first 1,000), and how many there were. */
  refused?: Array<{ line: number; email?: string; reason: string }>;
  refusedCount?: number;
  /** mobile_required: the recipients with no mobile number from any source. */
  recipients?: string[];
  /** reply_already_sent: when the reply was sent (RFC 3339). */
  sentAt?: string;
}

/** Optional fields an error object may carry beside the spec's four, for a client to say more. */
export type ErrorDetails = Pick<
  ErrorObject,
  | 'attemptsLeft'
  | 'limit'
  | 'cid'
  | 'copies'
  | 'endedAt'
  | 'contact'
  | 'refused'
  | 'refusedCount'
  | 'recipients'
  | 'sentAt'
>;

/** An error that is known where it is thrown; the HTTP layer turns it into the error object. */
export class AppError extends Error {
  readonly status: number;
  readonly errorCode: ErrorCode | undefined;
  /** Extra response headers, e.g. Retry-After for sms_rate_limit. */
  readonly headers: Record<string, string>;
  /** Extra fields of the error object (attemptsLeft, cid). */
  readonly details: ErrorDetails;

  constructor(
    errorCode: ErrorCode | undefined,
    status: number,
    message: string,
    options: { cause?: unknown; headers?: Record<string, string>; details?: ErrorDetails } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.status = status;
    this.errorCode = errorCode;
    this.headers = options.headers ?? {};
    this.details = options.details ?? {};
  }
}

export const badRequest = (message: string, errorCode: ErrorCode = 'validation_failed') =>
  new AppError(errorCode, 400, message);
export const notFound = (message = 'Not found') => new AppError('not_found', 404, message);
export const unavailable = (message: string, cause?: unknown) => new AppError('unavailable', 503, message, { cause });

export function newErrorId(): string {
  return randomUUID();
}

export function errorObject(
  status: number,
  message: string,
  errorCode?: string,
  id = newErrorId(),
  details: ErrorDetails = {},
): ErrorObject {
  return { ...(errorCode ? { id, kind: status, errorCode, message } : { id, kind: status, message }), ...details };
}
