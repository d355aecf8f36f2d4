import { randomUUID } from 'node:crypto';

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
  /** seal_broken: the IPFS CID of the content that failed verification. */
  cid?: string;
}

/** Optional fields an error object may carry beside the spec's four, for a client to say more. */
export type ErrorDetails = Pick<ErrorObject, 'attemptsLeft' | 'cid'>;

/**
 * The errorCode values (docs/specification.md#error-codes): the auth service's, plus the few generic ones the
 * services add.
 */
export type ErrorCode =
  | 'expired_code'
  | 'incorrect_code'
  | 'invalid_email'
  | 'invalid_mobile'
  | 'invalid_code_or_email'
  | 'invalid_bcc_address'
  | 'email_mismatch'
  | 'unauthorized_user'
  | 'forbidden_auth_method'
  | 'forbidden_file_type'
  | 'malware_detected'
  | 'file_too_large'
  | 'upload_limit_reached'
  | 'new_mobile_conflict'
  | 'sms_rate_limit'
  | 'email_and_mobile_mismatch'
  // Refinements of our own where the spec's codes would say the wrong thing.
  | 'code_attempts_exceeded'
  | 'seal_broken'
  // Generic codes of our own, for clients that switch on errorCode rather than on the status.
  | 'validation_failed'
  | 'not_found'
  | 'unauthenticated'
  | 'forbidden'
  | 'csrf_token_invalid'
  | 'conflict'
  /** A reply draft changed since the version the client sent (If-Match): it must load the draft again. */
  | 'draft_conflict'
  | 'payload_too_large'
  | 'unavailable'
  | 'upstream_failed'
  | 'internal';

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
export const unavailable = (message: string, cause?: unknown) =>
  new AppError('unavailable', 503, message, { cause });

export function newErrorId(): string {
  return randomUUID();
}

export function errorObject(status: number, message: string, errorCode?: string, id = newErrorId(), details: ErrorDetails = {}): ErrorObject {
  return { ...(errorCode ? { id, kind: status, errorCode, message } : { id, kind: status, message }), ...details };
}
