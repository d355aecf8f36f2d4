import { AppError } from '../../kernel/errors.ts';
import type { CodeOutcome } from './pending-codes.ts';

/**
 * The error of a code that was not accepted, the same for sign-in and both mobile changes: expired_code,
 * code_attempts_exceeded, code_replaced (with the new code's tries left) or the method's wrong-code error (with the
 * tries left when there was a code to try).
 */
export function refusedCode(
  checked: Exclude<CodeOutcome<unknown>, { outcome: 'accepted' }>,
  wrongCode: AppError,
): AppError {
  switch (checked.outcome) {
    case 'expired':
      return new AppError('expired_code', 401, 'The code has expired; request a new one');
    case 'voided':
      return new AppError(
        'code_attempts_exceeded',
        401,
        'Too many wrong tries: this code can no longer be used; request a new one',
      );
    case 'replaced':
      return new AppError('code_replaced', 401, 'A newer code replaced this one; enter the newest code', {
        details: { attemptsLeft: checked.attemptsLeft },
      });
    case 'incorrect':
      if (checked.attemptsLeft === undefined) return wrongCode;
      return new AppError(wrongCode.errorCode, wrongCode.status, wrongCode.message, {
        details: { attemptsLeft: checked.attemptsLeft },
      });
  }
}
