import { AppError } from '../../kernel/errors.ts';
import type { EndReason, SealedMessage, SealedRecipient } from '../tables.ts';

/** How a sealed message ended (SealEndSchema before it is written out). */
export interface MessageEnd {
  reason: EndReason;
  at: Date;
  note?: string;
}

type EndColumns = Pick<SealedMessage, 'expires_at' | 'ended_at' | 'end_reason' | 'end_note'>;

/**
 * The end of a message at `now`, or undefined while it may be read. Expiry holds from the moment the end date
 * passes (docs/specification.md#end-dates), before the background pass has recorded it and destroyed the key.
 */
export function messageEnd(message: EndColumns, now: number): MessageEnd | undefined {
  if (message.ended_at !== null) {
    return {
      reason: message.end_reason ?? 'withdrawn',
      at: message.ended_at,
      ...(message.end_note !== null ? { note: message.end_note } : {}),
    };
  }
  if (message.expires_at !== null && message.expires_at.getTime() <= now) {
    return { reason: 'expired', at: message.expires_at };
  }
  return undefined;
}

/** The answer after an end: 410 with message_expired or message_withdrawn, when, and whom to ask (the sender). */
export function endedError(message: Pick<SealedMessage, 'id' | 'sender'>, end: Pick<MessageEnd, 'reason' | 'at'>) {
  const expired = end.reason === 'expired';
  return new AppError(
    expired ? 'message_expired' : 'message_withdrawn',
    410,
    `Sealed message ${message.id} ${expired ? 'expired' : 'was withdrawn'} on ${end.at.toISOString()}: ` +
      'its content is gone',
    { details: { endedAt: end.at.toISOString(), contact: message.sender } },
  );
}

/**
 * Throws the 410 when the message ended, or, for a reader, when it was withdrawn for them alone. The
 * message's own end comes first: it is the one every recipient is told of.
 */
export function assertReadable(
  message: EndColumns & Pick<SealedMessage, 'id' | 'sender'>,
  recipient: Pick<SealedRecipient, 'withdrawn_at'> | undefined,
  now: number,
): void {
  const end = messageEnd(message, now);
  if (end) throw endedError(message, end);
  if (recipient?.withdrawn_at) throw endedError(message, { reason: 'withdrawn', at: recipient.withdrawn_at });
}

/** SealEndSchema's form of an end. */
export function endView(end: MessageEnd) {
  return { reason: end.reason, at: end.at.toISOString(), ...(end.note !== undefined ? { note: end.note } : {}) };
}
