import { hash, randomBytes } from 'node:crypto';
import type { Kysely, Transaction, Updateable } from 'kysely';
import { emailKey } from '../seal/recipients.ts';
import type { AuthTables, SessionRow, SessionsTable, SignInMethodName } from '../tables.ts';
import type { SessionCache } from './cache.ts';

export interface SessionTimeouts {
  idleMs: number;
  absoluteMs: number;
  rememberMeMs: number;
}

/** A new or rotated session: the row and the token that only the cookie carries. */
export interface IssuedSession {
  session: SessionRow;
  token: string;
}

/**
 * Database work on sessions; `now` is always passed in so that every decision uses one clock reading.
 * With a cache (SESSION_CACHE_SIZE), each write forgets the rows it changed once it is committed, so
 * that this instance never serves its own change late; the others hear of it from the table's trigger.
 */
export class SessionStore {
  constructor(
    private readonly db: Kysely<AuthTables>,
    private readonly timeouts: SessionTimeouts,
    private readonly cache?: SessionCache,
  ) {}

  async create(now: Date): Promise<IssuedSession> {
    const token = newToken();
    const session = await this.db
      .insertInto('sessions')
      .values({
        token_hash: tokenHash(token),
        created_at: now,
        last_seen_at: now,
        expires_at: new Date(now.getTime() + this.timeouts.absoluteMs),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { session, token };
  }

  /**
   * The live session the token names, or undefined when there is none or it is over (past its end,
   * or idle too long without remember-me). Use is recorded at most every so often, to spare writes.
   * `fresh` reads PostgreSQL whatever the cache holds: for requests that change what the session may do.
   */
  async findByToken(token: string, now: Date, options: { fresh?: boolean } = {}): Promise<SessionRow | undefined> {
    const key = tokenHash(token);
    const read = () =>
      this.db
        .selectFrom('sessions')
        .selectAll()
        .where('token_hash', '=', key)
        .where('expires_at', '>', now)
        .executeTakeFirst();
    const row = this.cache && !options.fresh ? await this.cache.get(key, read) : await read();
    if (!row || !this.alive(row, now)) return undefined;
    if (now.getTime() - row.last_seen_at.getTime() > Math.min(60_000, this.timeouts.idleMs / 4)) {
      await this.db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', row.id).execute();
      this.cache?.forget(key);
      return { ...row, last_seen_at: now };
    }
    return row;
  }

  alive(row: SessionRow, now: Date): boolean {
    if (row.expires_at <= now) return false;
    return row.remember_me || now.getTime() - row.last_seen_at.getTime() < this.timeouts.idleMs;
  }

  /**
   * Runs `work` with the session row locked (FOR UPDATE): concurrent requests on one session, such
   * as a burst of code guesses, are taken one at a time, so none can skip the count of wrong tries.
   */
  async locked<T>(
    sessionId: string,
    work: (trx: Transaction<AuthTables>, row: SessionRow) => Promise<T>,
  ): Promise<T | undefined> {
    let cachedAs: string | undefined;
    try {
      return await this.db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('sessions')
          .selectAll()
          .where('id', '=', sessionId)
          .forUpdate()
          .executeTakeFirst();
        cachedAs = row?.token_hash;
        return row ? work(trx, row) : undefined;
      });
    } finally {
      // After the commit (or rollback): forgotten before it, the old row could be read and kept again.
      if (cachedAs) this.cache?.forget(cachedAs);
    }
  }

  async update(trx: Transaction<AuthTables>, sessionId: string, values: Updateable<SessionsTable>): Promise<void> {
    await trx.updateTable('sessions').set(values).where('id', '=', sessionId).execute();
  }

  /**
   * Signs the session in and gives it a new token (no session fixation: a token planted or seen before
   * sign-in is worthless after it). The session's end starts again from now.
   */
  async signIn(
    trx: Transaction<AuthTables>,
    sessionId: string,
    who: { messageId: string; email: string; method: SignInMethodName; mobile?: string; rememberMe: boolean },
    now: Date,
  ): Promise<{ token: string; expiresAt: Date }> {
    // The proof the code gave, kept for every other message it satisfies, and the message it was for.
    await trx
      .insertInto('session_factors')
      .values({
        session_id: sessionId,
        method: who.method,
        email_key: emailKey(who.email),
        email: who.email,
        mobile: who.method === 'sms' ? (who.mobile ?? '') : '',
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
    await trx
      .insertInto('session_grants')
      .values({ session_id: sessionId, message_id: who.messageId, email: who.email, method: who.method })
      .onConflict((oc) =>
        oc.columns(['session_id', 'message_id']).doUpdateSet({ email: who.email, method: who.method }),
      )
      .execute();
    const token = newToken();
    const lifetime = who.rememberMe ? this.timeouts.rememberMeMs : this.timeouts.absoluteMs;
    const expiresAt = new Date(now.getTime() + lifetime);
    await this.update(trx, sessionId, {
      token_hash: tokenHash(token),
      message_id: who.messageId,
      email: who.email,
      method: who.method,
      signed_in_at: now,
      remember_me: who.rememberMe,
      last_seen_at: now,
      expires_at: expiresAt,
    });
    return { token, expiresAt };
  }

  /**
   * Records `sender` as the address this session proved as a sender's and gives it a new token, as signIn()
   * does (no session fixation). Its end stays where it was: a sender signs in to a session started just before.
   */
  async signInSender(
    trx: Transaction<AuthTables>,
    sessionId: string,
    sender: string,
    now: Date,
  ): Promise<{ token: string; expiresAt: Date }> {
    const token = newToken();
    const row = await trx
      .updateTable('sessions')
      .set({ token_hash: tokenHash(token), sender, last_seen_at: now })
      .where('id', '=', sessionId)
      .returning('expires_at')
      .executeTakeFirstOrThrow();
    return { token, expiresAt: row.expires_at };
  }

  /** The number a mobile change goes to, kept while the code to the current number is pending; null ends it. */
  async setMobileChangeTo(sessionId: string, mobile: string | null): Promise<void> {
    this.forget(
      await this.db
        .updateTable('sessions')
        .set({ mobile_change_to: mobile })
        .where('id', '=', sessionId)
        .returning('token_hash')
        .execute(),
    );
  }

  async delete(sessionId: string): Promise<void> {
    this.forget(await this.db.deleteFrom('sessions').where('id', '=', sessionId).returning('token_hash').execute());
  }

  /**
   * "Sign out everywhere": deletes the session and every other one that proved a factor of the same address
   * (session_factors, docs/decisions.md#sessions-follow-the-person): the same person's other browsers and their
   * other messages. Returns how many ended. Each one is forgotten here; other instances hear of it from the trigger.
   */
  async deleteForPerson(sessionId: string): Promise<number> {
    const ended = await this.db
      .deleteFrom('sessions')
      .where((eb) =>
        eb.or([
          eb('id', '=', sessionId),
          eb(
            'id',
            'in',
            eb
              .selectFrom('session_factors as other')
              .select('other.session_id')
              .where(
                'other.email_key',
                'in',
                eb.selectFrom('session_factors as own').select('own.email_key').where('own.session_id', '=', sessionId),
              ),
          ),
        ]),
      )
      .returning('token_hash')
      .execute();
    this.forget(ended);
    return ended.length;
  }

  /**
   * Removes sessions past their end or idle too long; returns how many. Nothing to forget here: every row
   * it deletes is over by this clock, so a cached copy is refused anyway, and the trigger announces each
   * delete. No RETURNING either, since a cleanup after a long stop may delete very many rows.
   */
  async deleteExpired(now: Date): Promise<number> {
    const idleSince = new Date(now.getTime() - this.timeouts.idleMs);
    const result = await this.db
      .deleteFrom('sessions')
      .where((eb) =>
        eb.or([
          eb('expires_at', '<=', now),
          eb.and([eb('remember_me', '=', false), eb('last_seen_at', '<=', idleSince)]),
        ]),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  private forget(changed: Array<{ token_hash: string }>): void {
    for (const row of changed) this.cache?.forget(row.token_hash);
  }
}

/** 256 random bits, base64url (43 characters). */
function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * A plain SHA-256 is enough here (no salt, no key): the token is 256 random bits, so the hash cannot be
 * reversed by guessing, and it must be looked up by equality.
 */
export function tokenHash(token: string): string {
  // The one-shot hash: a third of createHash's time here, and it runs for every request with a cookie.
  return hash('sha256', token, 'hex');
}
