import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { SessionStore } from '../sessions/store.ts';
import type { AuthTables, CodePurpose, SessionRow, SignInMethodName } from '../tables.ts';
import { isReplaced, keepReplaced, readReplaced } from './replaced-codes.ts';

/** Codes are 6 decimal digits (docs/design.md#codes). */
export const CODE_LENGTH = 6;

/** What a code is bound to: it proves nothing for another session, message, recipient or number. */
export interface CodeTarget {
  purpose: CodePurpose;
  method: SignInMethodName;
  messageId: string;
  /** The recipient's address as on record. */
  email: string;
  /** E.164 number or email address the code was sent to. */
  destination: string;
}

export type CodeOutcome<T> =
  | { outcome: 'accepted'; target: CodeTarget; result: T }
  | { outcome: 'expired'; method: SignInMethodName }
  /** `attemptsLeft`: wrong tries left before the code is void (undefined when there was no code to try). */
  | { outcome: 'incorrect'; method: SignInMethodName | undefined; attemptsLeft?: number }
  /** A code that a newer one replaced: no try of the new code is lost; `attemptsLeft` are the new code's. */
  | { outcome: 'replaced'; method: SignInMethodName; attemptsLeft: number }
  /**
   * Too many wrong tries: the code is void (this try voided it, or it was voided before); a new one must be requested.
   */
  | { outcome: 'voided'; method: SignInMethodName | undefined };

/** The session's sign-in code as the reader page may learn it again after a reload (never the code itself). */
export interface PendingCode {
  method: SignInMethodName;
  messageId: string;
  email: string;
  destination: string;
  createdAt: Date;
}

/**
 * The one pending code of a session. Only an HMAC of it is stored (keyed by AUTH_SECRET and bound to the
 * session and its target), so neither the database nor its backups hold a usable code.
 */
export class PendingCodes {
  constructor(
    private readonly sessions: SessionStore,
    private readonly options: { codeKey: Buffer; expirationMs: number; maxAttempts: number },
  ) {}

  /** A fresh code from the CSPRNG (crypto.randomInt is uniform: no modulo bias). */
  newCode(): string {
    return String(randomInt(0, 10 ** CODE_LENGTH)).padStart(CODE_LENGTH, '0');
  }

  /**
   * Stores `code` as the session's pending code, replacing any earlier one. The count of wrong tries
   * carries over from the code it replaces, so asking for another code does not give an attacker new
   * tries; only once a code was voided by too many wrong tries does the next code start from zero. The code it
   * replaces is kept (as its HMAC) among the replaced ones while it would still be fresh.
   */
  async store(sessionId: string, target: CodeTarget, code: string, now: Date): Promise<void> {
    await this.sessions.locked(sessionId, async (trx, row) => {
      const carried = row.code_failed_attempts >= this.options.maxAttempts ? 0 : row.code_failed_attempts;
      const earlier = pendingTarget(row);
      const replaced =
        earlier && row.code_created_at
          ? { hmac: row.code_hmac!, createdAt: row.code_created_at.getTime(), target: earlier }
          : undefined;
      await this.sessions.update(trx, sessionId, {
        code_replaced: keepReplaced(
          readReplaced<CodeTarget>(row.code_replaced),
          replaced,
          now,
          this.options.expirationMs,
        ),
        code_hmac: this.hmac(sessionId, target, code),
        code_purpose: target.purpose,
        code_method: target.method,
        code_message_id: target.messageId,
        code_email: target.email,
        code_destination: target.destination,
        code_created_at: now,
        code_failed_attempts: carried,
      });
    });
  }

  /**
   * Checks a submitted code against the session's pending code of this purpose, with the row locked so
   * that parallel guesses are counted one by one. Right and fresh: the code is used up and `onAccepted`
   * runs in the same transaction. Right but older than SMS_CODE_EXPIRATION: expired. One of the codes this one
   * replaced, still fresh: replaced, which costs no try of this code but counts among the session's replaced tries;
   * once those reach CODE_MAX_ATTEMPTS, such a try is a wrong try like any other (so guessing gains nothing from
   * them). Anything else counts as a wrong try; the last allowed wrong try voids the code.
   */
  async check<T>(
    sessionId: string,
    submitted: string,
    purpose: CodePurpose,
    now: Date,
    onAccepted: (trx: Transaction<AuthTables>, target: CodeTarget) => Promise<T>,
  ): Promise<CodeOutcome<T>> {
    const outcome = await this.sessions.locked(sessionId, async (trx, row): Promise<CodeOutcome<T>> => {
      const target = pendingTarget(row);
      // The target stays after a code was voided (for "send a new code"), the code itself is gone.
      if (!target && row.code_failed_attempts >= this.options.maxAttempts)
        return { outcome: 'voided', method: row.code_method ?? undefined };
      // Likewise after a right but expired try: that code stays expired.
      if (!target && row.code_purpose === purpose && row.code_method && row.code_created_at)
        return { outcome: 'expired', method: row.code_method };
      if (!target || target.purpose !== purpose) return { outcome: 'incorrect', method: target?.method };
      const right = timingSafeEqual(
        Buffer.from(this.hmac(sessionId, target, normalizeSubmittedCode(submitted)), 'hex'),
        Buffer.from(row.code_hmac!, 'hex'),
      );
      const fresh = now.getTime() - row.code_created_at!.getTime() <= this.options.expirationMs;
      if (right && fresh) {
        await this.sessions.update(trx, sessionId, { ...CLEARED, code_failed_attempts: 0, code_replaced_tries: 0 });
        return { outcome: 'accepted', target, result: await onAccepted(trx, target) };
      }
      if (right) {
        await this.sessions.update(trx, sessionId, CODE_GONE);
        return { outcome: 'expired', method: target.method };
      }
      const replaced = isReplaced(
        readReplaced<CodeTarget>(row.code_replaced),
        purpose,
        (earlier) => this.hmac(sessionId, earlier, normalizeSubmittedCode(submitted)),
        now,
        this.options.expirationMs,
      );
      if (replaced && row.code_replaced_tries < this.options.maxAttempts) {
        await this.sessions.update(trx, sessionId, { code_replaced_tries: row.code_replaced_tries + 1 });
        return {
          outcome: 'replaced',
          method: target.method,
          attemptsLeft: this.options.maxAttempts - row.code_failed_attempts,
        };
      }
      const failed = row.code_failed_attempts + 1;
      if (failed >= this.options.maxAttempts) {
        await this.sessions.update(trx, sessionId, { ...CODE_GONE, code_failed_attempts: failed });
        return { outcome: 'voided', method: target.method };
      }
      await this.sessions.update(trx, sessionId, { code_failed_attempts: failed });
      return { outcome: 'incorrect', method: target.method, attemptsLeft: this.options.maxAttempts - failed };
    });
    return outcome ?? { outcome: 'incorrect', method: undefined };
  }

  /**
   * The session's latest sign-in code for `messageId`: where it went and when. `live` while it can still
   * be tried (not used, voided or expired by a right try); the target stays after that, so that "send a
   * new code" needs nothing typed again.
   */
  latest(
    row: SessionRow,
    messageId: string,
  ): (PendingCode & { live: boolean; voided: boolean; attemptsLeft: number }) | undefined {
    if (
      row.code_purpose !== 'sign_in' ||
      row.code_message_id !== messageId ||
      !row.code_method ||
      !row.code_email ||
      !row.code_destination ||
      !row.code_created_at
    ) {
      return undefined;
    }
    return {
      method: row.code_method,
      messageId,
      email: row.code_email,
      destination: row.code_destination,
      createdAt: row.code_created_at,
      live: row.code_hmac !== null,
      voided: row.code_failed_attempts >= this.options.maxAttempts,
      attemptsLeft: Math.max(0, this.options.maxAttempts - row.code_failed_attempts),
    };
  }

  private hmac(sessionId: string, target: CodeTarget, code: string): string {
    // Fields joined with a separator that none of them can contain (ids, addresses, E.164, digits).
    const bound = [
      sessionId,
      target.purpose,
      target.method,
      target.messageId,
      target.email,
      target.destination,
      code,
    ].join('\n');
    return createHmac('sha256', this.options.codeKey).update(bound, 'utf8').digest('hex');
  }
}

/** A code that can no longer be used (voided, or right but expired): the code goes, its target stays for a resend. */
const CODE_GONE = { code_hmac: null } as const;

const CLEARED = {
  code_hmac: null,
  code_purpose: null,
  code_method: null,
  code_message_id: null,
  code_email: null,
  code_destination: null,
  code_created_at: null,
  code_replaced: null,
} as const;

function pendingTarget(row: SessionRow): CodeTarget | undefined {
  if (
    !row.code_hmac ||
    !row.code_purpose ||
    !row.code_method ||
    !row.code_message_id ||
    !row.code_email ||
    !row.code_destination
  ) {
    return undefined;
  }
  return {
    purpose: row.code_purpose,
    method: row.code_method,
    messageId: row.code_message_id,
    email: row.code_email,
    destination: row.code_destination,
  };
}

/** People type codes with spaces or dashes ("123 456"); those are not part of the code. */
export function normalizeSubmittedCode(input: string): string {
  return input.replace(/[\s-]/g, '');
}
