import type { Kysely } from 'kysely';
import type { RecipientSealed, SealClient } from '../seal/client.ts';
import { emailKey, type Recipient, type RecipientDirectory } from '../seal/recipients.ts';
import type { AuthTables, SignInMethodName } from '../tables.ts';
import { normalizeMobile } from '../mobile/number.ts';
import { shownHeader } from '../hidden-characters.ts';

/** A proof a session holds: an address (email code), or an address with a mobile number (SMS code). */
export interface Factor {
  method: SignInMethodName;
  email_key: string;
  email: string;
  /** '' for an email factor. */
  mobile: string;
}

/** A sealed message a session may open, as the list of them shows it. */
export interface OpenableMessage {
  id: string;
  sender: string;
  subject: string;
  sealedAt: string;
}

/**
 * Which sealed messages a session opens (docs/decisions.md#sessions-follow-the-person): those whose
 * sign-in method for one of its proven addresses is satisfied by what it proved. An email recipient needs
 * the address proven by an email code; an SMS recipient needs an SMS code to the number in force for that
 * message (the sender's, or the one the recipient confirmed since). A message opened once is granted for
 * the rest of the session, so that its requests do not ask the seal service again.
 */
export class MessageAccess {
  constructor(
    private readonly db: Kysely<AuthTables>,
    private readonly recipients: RecipientDirectory,
    private readonly seal: SealClient,
  ) {}

  async factors(sessionId: string): Promise<Factor[]> {
    return this.db
      .selectFrom('session_factors')
      .select(['method', 'email_key', 'email', 'mobile'])
      .where('session_id', '=', sessionId)
      .execute();
  }

  /** The recipient the session opens the message as, or undefined when it has proven nothing that does. */
  async open(sessionId: string, messageId: string): Promise<{ email: string; method: SignInMethodName } | undefined> {
    const grant = await this.db
      .selectFrom('session_grants')
      .select(['email', 'method'])
      .where('session_id', '=', sessionId)
      .where('message_id', '=', messageId)
      .executeTakeFirst();
    if (grant) return grant;
    const factors = await this.factors(sessionId);
    for (const email of new Set(factors.map((factor) => factor.email_key))) {
      const found = await this.recipients.find(messageId, email);
      if (!found || !satisfied(found.recipient, factors)) continue;
      const opened = { email: found.recipient.email, method: found.recipient.method };
      await this.db
        .insertInto('session_grants')
        .values({ session_id: sessionId, message_id: messageId, ...opened })
        .onConflict((oc) => oc.doNothing())
        .execute();
      return opened;
    }
    return undefined;
  }

  /**
   * The sealed messages the session opens, newest first: for each proven address the seal service's list
   * of its messages, kept where the message's method for that address is satisfied and it has not ended
   * (expired, withdrawn for everyone or for that address; docs/specification.md#end-dates).
   */
  async openable(sessionId: string, limit: number, now: Date): Promise<OpenableMessage[]> {
    const factors = await this.factors(sessionId);
    const byId = new Map<string, OpenableMessage>();
    for (const email of new Set(factors.map((factor) => factor.email))) {
      const entries = await this.seal.sealedFor(email, limit);
      if (entries.length === 0) continue;
      // A number the recipient confirmed since sealing (PUT /v1/mobile) wins over the sender's.
      const overrides = new Map(
        (
          await this.db
            .selectFrom('mobile_overrides')
            .select(['message_id', 'mobile'])
            .where('email_key', '=', emailKey(email))
            .where(
              'message_id',
              'in',
              entries.map((entry) => entry.id),
            )
            .execute()
        ).map((row) => [row.message_id, row.mobile]),
      );
      for (const entry of entries) {
        if (ended(entry, now)) continue;
        const recipient = toRecipient(entry.recipient, overrides.get(entry.id));
        if (!byId.has(entry.id) && satisfied(recipient, factors)) {
          // As the page shows them: nothing hidden that could reorder or disguise them (hidden-characters.ts).
          const shown = { sender: shownHeader(entry.sender), subject: shownHeader(entry.subject) };
          byId.set(entry.id, { id: entry.id, ...shown, sealedAt: entry.sealedAt });
        }
      }
    }
    return [...byId.values()].sort((a, b) => b.sealedAt.localeCompare(a.sealedAt)).slice(0, limit);
  }
}

function ended(entry: RecipientSealed[number], now: Date): boolean {
  return (
    entry.end !== undefined ||
    entry.recipient.withdrawnAt !== undefined ||
    (entry.expiresAt !== undefined && Date.parse(entry.expiresAt) <= now.getTime())
  );
}

function toRecipient(
  recipient: { email: string; method: SignInMethodName; mobile?: string },
  override: string | undefined,
): Recipient {
  const recorded = recipient.mobile ? (normalizeMobile(recipient.mobile) ?? recipient.mobile) : undefined;
  return { email: recipient.email, method: recipient.method, mobile: override ?? recorded, language: undefined };
}

function satisfied(recipient: Recipient, factors: Factor[]): boolean {
  const key = emailKey(recipient.email);
  if (recipient.method === 'email')
    return factors.some((factor) => factor.method === 'email' && factor.email_key === key);
  return (
    recipient.mobile !== undefined &&
    factors.some((factor) => factor.method === 'sms' && factor.email_key === key && factor.mobile === recipient.mobile)
  );
}
