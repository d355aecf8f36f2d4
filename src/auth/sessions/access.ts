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
   * One page of the sealed messages the session opens, newest first (then by id): for each proven address the
   * seal service's list of its messages, kept where the message's method for that address is satisfied and it
   * has not ended (expired, withdrawn for everyone or for that address; docs/specification.md#end-dates), and is
   * not `page.except`. The page goes on after `page.after` (the last entry of the page before); `next` is this
   * page's last entry when more follow. Each address's list is read from B in batches from that point on, only
   * until it has given one entry more than the page holds, so 20 of 1,000 messages fetch about 20 rows.
   */
  async openable(
    sessionId: string,
    page: { limit: number; after?: ListPosition; except?: string },
    now: Date,
  ): Promise<{ messages: OpenableMessage[]; next?: ListPosition }> {
    const factors = await this.factors(sessionId);
    const byId = new Map<string, OpenableMessage>();
    for (const email of new Set(factors.map((factor) => factor.email))) {
      for (const entry of await this.keptFor(email, factors, page, now))
        if (!byId.has(entry.id)) byId.set(entry.id, entry);
    }
    const sorted = [...byId.values()].sort(newestFirst);
    const messages = sorted.slice(0, page.limit);
    const last = messages.at(-1);
    return sorted.length > page.limit && last
      ? { messages, next: { sealedAt: last.sealedAt, id: last.id } }
      : { messages };
  }

  /** Up to `page.limit + 1` of the messages addressed to `email` after `page.after` that the session opens. */
  private async keptFor(
    email: string,
    factors: Factor[],
    page: { limit: number; after?: ListPosition; except?: string },
    now: Date,
  ): Promise<OpenableMessage[]> {
    const wanted = page.limit + 1;
    const kept: OpenableMessage[] = [];
    let after = page.after;
    // Bounded: a run of more than SCAN_BATCHES × SCAN_BATCH messages this session cannot open ends the list there.
    for (let batch = 0; batch < SCAN_BATCHES && kept.length < wanted; batch++) {
      const size = Math.min(SCAN_BATCH, Math.max(wanted - kept.length, 1));
      const entries = await this.seal.sealedFor(email, size, after);
      if (entries.length === 0) break;
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
        if (ended(entry, now) || entry.id === page.except) continue;
        if (satisfied(toRecipient(entry.recipient, overrides.get(entry.id)), factors)) {
          // As the page shows them: nothing hidden that could reorder or disguise them (hidden-characters.ts).
          const shown = { sender: shownHeader(entry.sender), subject: shownHeader(entry.subject) };
          kept.push({ id: entry.id, ...shown, sealedAt: entry.sealedAt });
        }
      }
      const last = entries.at(-1)!;
      after = { sealedAt: last.sealedAt, id: last.id };
      if (entries.length < size) break;
    }
    return kept.slice(0, wanted);
  }
}

/** Where a page of the list ends: its last entry's sealedAt and id (the order is sealedAt desc, id asc). */
export interface ListPosition {
  sealedAt: string;
  id: string;
}

/** Entries asked of B at once, and how many such batches one address's page may read at most. */
const SCAN_BATCH = 200;
const SCAN_BATCHES = 10;

/** B's order: the newest first, by sealedAt to the millisecond (ISO strings compare as times), then the id. */
function newestFirst(a: OpenableMessage, b: OpenableMessage): number {
  if (a.sealedAt !== b.sealedAt) return a.sealedAt < b.sealedAt ? 1 : -1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
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
