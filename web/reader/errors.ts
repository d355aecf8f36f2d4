import { ApiError } from './api-error.ts';
import { formatDuration } from './format.ts';
import type { Texts } from './texts/index.ts';

/** What a page's texts need to turn a failure into a sentence: the reader's and the sender's have it. */
export type ErrorTexts = Pick<Texts, 'errors' | 'errorFallback' | 'units'>;

/**
 * The sentence for a failure: the errorCode picks it (docs/specification.md#error-codes); a wait from
 * Retry-After is added where there is one. Never the server's own message or body.
 */
export function errorText(t: ErrorTexts, error: unknown): string {
  if (!(error instanceof ApiError)) return t.errors.internal;
  if (error.network) return t.errorFallback.network;
  const known = error.errorCode !== undefined ? (t.errors as Record<string, string>)[error.errorCode] : undefined;
  const sentence = known ?? t.errorFallback.status(error.status);
  if (error.retryAfter !== undefined && error.retryAfter > 0)
    return `${sentence} ${t.errorFallback.retryIn(formatDuration(t, error.retryAfter))}`;
  return sentence;
}

/** The error object's id, shown small under server errors so that support can find the log line. */
export function errorReference(t: ErrorTexts, error: unknown): string | undefined {
  return error instanceof ApiError && error.errorId && error.status >= 500
    ? t.errorFallback.reference(error.errorId)
    : undefined;
}

/** The message ended (expired, or withdrawn for everyone or for this reader): a final state. */
export function isEnded(error: unknown): error is ApiError {
  return isCode(error, 'message_expired', 'message_withdrawn');
}

export function isCode(error: unknown, ...codes: string[]): error is ApiError {
  return error instanceof ApiError && error.errorCode !== undefined && codes.includes(error.errorCode);
}
