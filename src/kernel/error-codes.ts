/**
 * The errorCode values (docs/specification.md#error-codes): the auth service's, plus the few generic ones the
 * services add. A file of its own that imports nothing: the reader page (web/reader) has a sentence for
 * each, and its type check, with the browser's types and no Node's, reads this file too. One list, from
 * which the type is derived, so that a test can go through the codes at run time.
 */
export const ERROR_CODES = [
  'expired_code',
  'incorrect_code',
  'invalid_email',
  'invalid_mobile',
  'invalid_code_or_email',
  'invalid_bcc_address',
  'email_mismatch',
  'unauthorized_user',
  'forbidden_auth_method',
  'forbidden_file_type',
  'malware_detected',
  'file_too_large',
  'upload_limit_reached',
  'new_mobile_conflict',
  'sms_rate_limit',
  'email_and_mobile_mismatch',
  // Refinements of our own where the spec's codes would say the wrong thing.
  'code_attempts_exceeded',
  /** A code that a newer one of the same session replaced: no try of the new code is spent (HTTP 401). */
  'code_replaced',
  'seal_broken',
  /** The sealed message was withdrawn, for everyone or for this recipient: its content is gone (HTTP 410). */
  'message_withdrawn',
  /** The sealed message's end date has passed: its content is gone (HTTP 410). */
  'message_expired',
  /** The organisation requires SMS sign-in and a recipient of a message to seal has no mobile number (HTTP 400). */
  'mobile_required',
  // Generic codes of our own, for clients that switch on errorCode rather than on the status.
  'validation_failed',
  'not_found',
  'unauthenticated',
  'forbidden',
  'csrf_token_invalid',
  'conflict',
  /** A reply draft changed since the version the client sent (If-Match): it must load the draft again. */
  'draft_conflict',
  /** The reply draft a change was made against was sent meanwhile (another window or device); with sentAt. */
  'reply_already_sent',
  'payload_too_large',
  'unavailable',
  'upstream_failed',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];
