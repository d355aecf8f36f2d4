import { AppError, type ErrorDetails } from '../../kernel/errors.ts';

/** The errorCodes of a sealed message that ended (docs/specification.md#end-dates): 410, final. */
export const END_CODES = ['message_expired', 'message_withdrawn'] as const;
export type EndCode = (typeof END_CODES)[number];

export function isEndCode(value: unknown): value is EndCode {
  return END_CODES.includes(value as EndCode);
}

/** A 410 of an ended message: `endedAt` and `contact` (the sender's address) tell the reader when and whom to ask. */
export function endedError(errorCode: EndCode, details: ErrorDetails, cause?: unknown): AppError {
  const what = errorCode === 'message_expired' ? 'passed its end date' : 'was withdrawn';
  return new AppError(errorCode, 410, `This sealed message ${what}: its content is gone`, { details, cause });
}

/** The message ended, for everyone or for this reader: nothing of it may be read or answered any more. */
export function isEnded(error: unknown): error is AppError {
  return error instanceof AppError && error.status === 410 && isEndCode(error.errorCode);
}
