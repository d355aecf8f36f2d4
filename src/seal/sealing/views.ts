import type { Static } from 'typebox';
import { SEAL_HEADER_MAX_LENGTH, type SealFactsSchema } from '../../contracts/seal.ts';
import type { SealedMessage, SealedPin, SealedRecipient } from '../tables.ts';
import { endView, messageEnd } from './end-state.ts';
import type { SealedRecord } from './store.ts';

/** What both answers say of the sealed message itself. */
function messageFields({ message }: SealedRecord) {
  return { id: message.id, cid: message.cid, sha256: message.sha256, sender: message.sender, subject: message.subject };
}

/** The answer of POST /v1/seal: what the exchange needs to notify each recipient. */
export function sealAnswer(record: SealedRecord, publicUrl: string) {
  const { message } = record;
  return {
    ...messageFields(record),
    recipients: record.recipients.map((recipient) => ({
      email: recipient.email,
      method: recipient.method,
      ...(recipient.mobile_source ? { mobileSource: recipient.mobile_source } : {}),
      ...(recipient.language ? { language: recipient.language } : {}),
      // The reader opens in the language the notification is written in (the exchange adds `lang`
      // for the default language itself, which only it knows).
      link: `${publicUrl}/m/${message.id}${recipient.language ? `?lang=${recipient.language}` : ''}`,
    })),
    pins: record.pins.map(pinState),
    ...(message.expires_at ? { expiresAt: message.expires_at.toISOString() } : {}),
  };
}

/** expiresAt and end of a message at `now` (an expiry holds before the pass records it). */
export function endFields(message: SealedMessage, now: number) {
  const end = messageEnd(message, now);
  return {
    ...(message.expires_at ? { expiresAt: message.expires_at.toISOString() } : {}),
    ...(end ? { end: endView(end) } : {}),
  };
}

function pinState(pin: SealedPin) {
  return { cluster: pin.cluster, status: pin.status, ...(pin.error ? { error: pin.error } : {}) };
}

/** The X-Sealpost-Seal header of the verified content, or undefined when it would be too long. */
export function sealHeader({ message, pins }: SealedRecord): string | undefined {
  const facts: Static<typeof SealFactsSchema> = {
    id: message.id,
    cid: message.cid,
    sha256: message.sha256,
    sealedAt: message.sealed_at.toISOString(),
    pins: pins.map(pinState),
  };
  const value = Buffer.from(JSON.stringify(facts)).toString('base64url');
  return value.length <= SEAL_HEADER_MAX_LENGTH ? value : undefined;
}

export function recipientView(recipient: SealedRecipient) {
  return {
    email: recipient.email,
    method: recipient.method,
    ...(recipient.mobile ? { mobile: recipient.mobile } : {}),
    ...(recipient.mobile_source ? { mobileSource: recipient.mobile_source } : {}),
    ...(recipient.language ? { language: recipient.language } : {}),
    ...(recipient.withdrawn_at ? { withdrawnAt: recipient.withdrawn_at.toISOString() } : {}),
  };
}

/** GET /v1/sealed/{id}: metadata, recipients with their mobiles, pins with their retry state, its end. */
export function sealedView(record: SealedRecord, now: number) {
  const { message } = record;
  return {
    ...messageFields(record),
    size: message.size,
    sealedAt: message.sealed_at.toISOString(),
    recipients: record.recipients.map(recipientView),
    pins: record.pins.map(pinView),
    ...endFields(message, now),
  };
}

/** One pin with its follow-up state. */
export function pinView(pin: SealedPin) {
  return {
    cluster: pin.cluster,
    status: pin.status,
    ...(pin.error ? { error: pin.error } : {}),
    attempts: pin.attempts,
    updatedAt: pin.updated_at.toISOString(),
    ...(pin.status !== 'pinned' && pin.next_attempt_at ? { nextAttemptAt: pin.next_attempt_at.toISOString() } : {}),
  };
}
