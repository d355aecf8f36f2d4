import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { SessionStore } from '../sessions/store.ts';
import type { AuthTables, CodePurpose, SessionRow, SignInMethodName } from '../tables.ts';

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
  | { outcome: 'incorrect'; method: SignInMethodName | undefined };

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
   * tries; only once a code was voided by too many wrong tries does the next code start from zero.
   */
  async store(sessionId: string, target: CodeTarget, code: string, now: Date): Promise<void> {
    await this.sessions.locked(sessionId, async (trx, row) => {
      const carried = row.code_failed_attempts >= this.options.maxAttempts ? 0 : row.code_failed_attempts;
      await this.sessions.update(trx, sessionId, {
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
   * runs in the same transaction. Right but older than SMS_CODE_EXPIRATION: expired. Anything else
   * counts as a wrong try; the last allowed wrong try voids the code.
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
      if (!target || target.purpose !== purpose) return { outcome: 'incorrect', method: target?.method };
      const right = timingSafeEqual(
        Buffer.from(this.hmac(sessionId, target, normalizeSubmittedCode(submitted)), 'hex'),
        Buffer.from(row.code_hmac!, 'hex'),
      );
      const fresh = now.getTime() - row.code_created_at!.getTime() <= this.options.expirationMs;
      if (right && fresh) {
        await this.sessions.update(trx, sessionId, { ...CLEARED, code_failed_attempts: 0 });
        return { outcome: 'accepted', target, result: await onAccepted(trx, target) };
      }
      if (right) {
        await this.sessions.update(trx, sessionId, CLEARED);
        return { outcome: 'expired', method: target.method };
      }
      const failed = row.code_failed_attempts + 1;
      const voided = failed >= this.options.maxAttempts;
      await this.sessions.update(trx, sessionId, voided ? { ...CLEARED, code_failed_attempts: failed } : { code_failed_attempts: failed });
      return { outcome: 'incorrect', method: target.method };
    });
    return outcome ?? { outcome: 'incorrect', method: undefined };
  }

  private hmac(sessionId: string, target: CodeTarget, code: string): string {
    // Fields joined with a separator that none of them can contain (ids, addresses, E.164, digits).
    const bound = [sessionId, target.purpose, target.method, target.messageId, target.email, target.destination, code].join('\n');
    return createHmac('sha256', this.options.codeKey).update(bound, 'utf8').digest('hex');
  }
}

const CLEARED = {
  code_hmac: null,
  code_purpose: null,
  code_method: null,
  code_message_id: null,
  code_email: null,
  code_destination: null,
  code_created_at: null,
} as const;

function pendingTarget(row: SessionRow): CodeTarget | undefined {
  if (!row.code_hmac || !row.code_purpose || !row.code_method || !row.code_message_id || !row.code_email || !row.code_destination) {
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
