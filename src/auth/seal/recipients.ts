import type { Kysely, Transaction } from 'kysely';
import { normalizeEmail } from '../../kernel/email.ts';
import { isLanguage, type Language } from '../../kernel/languages.ts';
import { normalizeMobile } from '../mobile/number.ts';
import type { AuthTables, SignInMethodName } from '../tables.ts';
import type { SealClient, SealedRecord } from './client.ts';
import { endedError } from './end.ts';
import type { AppError } from '../../kernel/errors.ts';

/** A recipient as sign-in sees it: B's record, with a mobile number confirmed through PUT /v1/mobile winning. */
export interface Recipient {
  /** The address as on record (codes by email go there, not to what the reader typed). */
  email: string;
  method: SignInMethodName;
  mobile: string | undefined;
  /** The language the sender chose for this recipient (X-Sealpost-Language), if any. */
  language: Language | undefined;
}

/**
 * Finds the recipients of sealed messages. Addresses are compared normalised (trimmed, IDN domain in
 * punycode) and case-insensitively, as the seal service looks them up (docs/design.md#recipients).
 */
export class RecipientDirectory {
  constructor(
    private readonly db: Kysely<AuthTables>,
    private readonly seal: SealClient,
  ) {}

  async find(messageId: string, email: string): Promise<{ record: SealedRecord; recipient: Recipient } | undefined> {
    const record = await this.seal.sealed(messageId);
    if (!record) return undefined;
    const key = emailKey(email);
    const onRecord = record.recipients.find((r) => emailKey(r.email) === key);
    if (!onRecord) return undefined;
    const override = await this.db
      .selectFrom('mobile_overrides')
      .select('mobile')
      .where('message_id', '=', messageId)
      .where('email_key', '=', key)
      .executeTakeFirst();
    const recorded =
      typeof onRecord.mobile === 'string' && onRecord.mobile
        ? (normalizeMobile(onRecord.mobile) ?? onRecord.mobile)
        : undefined;
    const mobile = override?.mobile ?? recorded;
    return {
      record,
      recipient: {
        email: onRecord.email,
        method: onRecord.method,
        mobile,
        language: isLanguage(onRecord.language) ? onRecord.language : undefined,
      },
    };
  }

  /** Records the recipient's confirmed new number for this message. */
  async setMobile(
    trx: Transaction<AuthTables>,
    messageId: string,
    email: string,
    mobile: string,
    now: Date,
  ): Promise<void> {
    await trx
      .insertInto('mobile_overrides')
      .values({ message_id: messageId, email_key: emailKey(email), mobile, updated_at: now })
      .onConflict((oc) => oc.columns(['message_id', 'email_key']).doUpdateSet({ mobile, updated_at: now }))
      .execute();
  }
}

export function emailKey(email: string): string {
  return (normalizeEmail(email) ?? email.trim()).toLowerCase();
}

/**
 * How the record says the message ended, as the 410 to answer with, or undefined while it may be read. An end date
 * that has passed counts at once, before B's background pass records the end (docs/specification.md#end-dates).
 * With `email`, a withdrawal for that recipient alone counts too.
 */
export function recordEnd(record: SealedRecord, now: Date, email?: string): AppError | undefined {
  const contact = record.sender;
  if (record.end) {
    const code = record.end.reason === 'expired' ? 'message_expired' : 'message_withdrawn';
    return endedError(code, { endedAt: record.end.at, contact });
  }
  if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now.getTime())
    return endedError('message_expired', { endedAt: new Date(record.expiresAt).toISOString(), contact });
  if (email === undefined) return undefined;
  const key = emailKey(email);
  const withdrawnAt = record.recipients.find((r) => emailKey(r.email) === key)?.withdrawnAt;
  return withdrawnAt ? endedError('message_withdrawn', { endedAt: withdrawnAt, contact }) : undefined;
}
