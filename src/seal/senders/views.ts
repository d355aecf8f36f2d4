import type { Static } from 'typebox';
import type { SenderSealedSchema } from '../../contracts/seal.ts';
import { endView, messageEnd } from '../sealing/end-state.ts';
import type { RecipientSummary, SenderMessage } from './sender-store.ts';

const time = (key: string, value: Date | null) => (value ? { [key]: value.toISOString() } : {});

/** SenderSealedSchema's form of each message, with its recipients' summaries, in the messages' order. */
export function senderEntries(
  messages: SenderMessage[],
  recipients: RecipientSummary[],
  now: number,
): Array<Static<typeof SenderSealedSchema>> {
  return messages.map((message) => {
    const end = messageEnd(message, now);
    return {
      id: message.id,
      subject: message.subject,
      sealedAt: message.sealed_at.toISOString(),
      ...(message.expires_at ? { expiresAt: message.expires_at.toISOString() } : {}),
      ...(end ? { end: endView(end) } : {}),
      recipients: recipients
        .filter((recipient) => recipient.sealed_id === message.id)
        .map((recipient) => ({
          email: recipient.email,
          method: recipient.method,
          ...(recipient.mobile_source ? { mobileSource: recipient.mobile_source } : {}),
          ...time('withdrawnAt', recipient.withdrawn_at),
          ...time('notifiedAt', recipient.notified_at),
          ...time('firstOpenedAt', recipient.first_opened_at),
          ...time('lastOpenedAt', recipient.last_opened_at),
          failedSignIns: recipient.failed_sign_ins,
          downloads: recipient.downloads,
          replies: recipient.replies,
        })),
    };
  });
}
