import { ApiError } from './api-error.ts';

/**
 * What a screen shows beyond what it was drawn from (an error said, a code gone, a wait, what was typed), kept on
 * the reader so that a language switch draws it again, and in sessionStorage per message so that a reload does
 * (docs/decisions.md#the-reader-part-b-stable-screens). Never a code or a token. The only words the server does
 * not have are the reply text this window typed and could not save (`reply`), kept so that no typed word is
 * lost; all of it is cleared at sign-out, and all but `reply` at sign-in.
 */
export interface Kept {
  signIn?: { email?: string; mobile?: string; error?: KeptError };
  /** Belongs to the code sent at `sentAt` (ms): a state of an older code is not shown for a newer one. */
  code?: { sentAt: number; error?: KeptError; resent?: boolean; gone?: 'expired' | 'voided' };
  /** The mobile change of either kind, as the message screen shows it. */
  mobile?: {
    open?: boolean;
    number?: string;
    /** The code step under way: where the code went, its length, and (number change) which step. */
    step?: { to: string; codeLength: number; step?: 'current' | 'new' };
    error?: KeptError;
    /** The number the change ended with: said in a status box. */
    done?: string;
  };
  /** The reply section's state that the saved draft does not hold (screens/reply.ts). */
  reply?: KeptReply;
  /** The page the list of other messages shows, and the cursor of every page up to the next (null: the first). */
  list?: { index: number; cursors: Array<string | null> };
}

/**
 * `choice`: both windows changed the draft and the recipient is to choose; `mine` is this window's text.
 * `sent`: another window or device sent the draft; `unsent` is what this window had typed.
 */
export type KeptReply = { choice: { mine: string } } | { sent: { sentAt?: string; unsent: string } };

/** An error as shown, enough to say it again: its code, tries left, and until when its wait lasts (ms). */
export interface KeptError {
  status: number;
  errorCode?: string;
  attemptsLeft?: number;
  limit?: 'interval' | 'hourly';
  until?: number;
}

export function keepError(error: unknown, now = Date.now()): KeptError | undefined {
  if (!(error instanceof ApiError)) return undefined;
  return {
    status: error.status,
    ...(error.errorCode !== undefined ? { errorCode: error.errorCode } : {}),
    ...(error.details.attemptsLeft !== undefined ? { attemptsLeft: error.details.attemptsLeft } : {}),
    ...(error.details.limit !== undefined ? { limit: error.details.limit } : {}),
    ...(error.retryAfter !== undefined ? { until: now + error.retryAfter * 1000 } : {}),
  };
}

/** The kept error as the error it was, its wait counted down to now; none when its wait is over. */
export function keptError(kept: KeptError | undefined, now = Date.now()): ApiError | undefined {
  if (!kept) return undefined;
  const left = kept.until !== undefined ? Math.ceil((kept.until - now) / 1000) : undefined;
  if (left !== undefined && left <= 0) return undefined;
  return new ApiError(kept.status, kept.errorCode, undefined, left, kept.errorCode ?? `HTTP ${kept.status}`, {
    ...(kept.attemptsLeft !== undefined ? { attemptsLeft: kept.attemptsLeft } : {}),
    ...(kept.limit !== undefined ? { limit: kept.limit } : {}),
  });
}

const key = (messageId: string) => `sealpost.reader.${messageId}`;

/** The state kept for this message in this tab; nothing when there is none or storage is off. */
export function loadKept(messageId: string): Kept {
  try {
    const text = window.sessionStorage.getItem(key(messageId));
    const parsed: unknown = text ? JSON.parse(text) : {};
    return typeof parsed === 'object' && parsed !== null ? (parsed as Kept) : {};
  } catch {
    return {};
  }
}

/** Writes `kept` for a reload; a browser with storage off keeps it for language switches only. */
export function saveKept(messageId: string, kept: Kept): void {
  try {
    window.sessionStorage.setItem(key(messageId), JSON.stringify(kept));
  } catch {
    // Storage off or full: the state still survives a language switch.
  }
}

export function clearKept(messageId: string): void {
  try {
    window.sessionStorage.removeItem(key(messageId));
  } catch {
    // As above.
  }
}
