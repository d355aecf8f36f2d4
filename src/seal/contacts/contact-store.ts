import { sql, type Kysely, type Transaction } from 'kysely';
import { Counter, type Registry } from 'prom-client';
import type { Clock } from '../../kernel/clock.ts';
import type { Language } from '../../kernel/languages.ts';
import type { Contact, SealTables } from '../tables.ts';
import type { ContactEntry } from './contact-row.ts';

/** What is on record for one address: the number its recipient confirmed, and the directory's entry. */
export interface OnRecord {
  confirmed?: { mobile: string; replaces: string | null };
  directory?: { mobile: string; language: Language | null };
}

/** A number the recipient confirmed, as the auth service reports it. */
export interface ConfirmedMobile {
  email: string;
  mobile: string;
  confirmedAt: Date;
  confirmedOn: string | null;
  /** The number the recipient replaced by this one (a mobile change); null for a number added. */
  replaces: string | null;
}

/**
 * The contacts directory and the numbers recipients confirmed (migration 0009), both keyed by the lower-cased
 * normalised address, and the one question sealing asks of them: which number applies to these recipients.
 */
export class ContactStore {
  /** Rows of directory imports, written or refused: an operator sees a CRM export going bad. */
  readonly importedRows = new Counter({
    name: 'seal_contacts_import_rows_total',
    help: 'Rows of contacts directory imports, by result: written, or refused (a bad row, or an import refused whole)',
    labelNames: ['result'] as const,
    registers: [],
  });

  constructor(
    private readonly db: Kysely<SealTables>,
    private readonly clock: Clock,
  ) {
    for (const result of ['written', 'refused']) this.importedRows.inc({ result }, 0);
  }

  registerMetrics(registry: Registry): void {
    registry.registerMetric(this.importedRows);
  }

  /** Inserts or replaces one batch of entries in one statement; a later entry for an address wins. */
  async upsert(trx: Transaction<SealTables> | Kysely<SealTables>, entries: ContactEntry[]): Promise<void> {
    if (entries.length === 0) return;
    // ON CONFLICT cannot touch one row twice in a statement: the last entry of an address stands for it.
    const byKey = new Map(entries.map((entry) => [entry.emailKey, entry]));
    const now = new Date(this.clock.now());
    await trx
      .insertInto('contacts')
      .values(
        [...byKey.values()].map((entry) => ({
          email_key: entry.emailKey,
          email: entry.email,
          mobile: entry.mobile,
          language: entry.language,
          updated_at: now,
        })),
      )
      .onConflict((oc) =>
        oc.column('email_key').doUpdateSet((eb) => ({
          email: eb.ref('excluded.email'),
          mobile: eb.ref('excluded.mobile'),
          language: eb.ref('excluded.language'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      .execute();
  }

  transaction<T>(work: (trx: Transaction<SealTables>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  async get(emailKey: string): Promise<Contact | undefined> {
    return this.db.selectFrom('contacts').selectAll().where('email_key', '=', emailKey).executeTakeFirst();
  }

  async confirmed(emailKey: string): Promise<ConfirmedMobile | undefined> {
    const row = await this.db
      .selectFrom('confirmed_mobiles')
      .selectAll()
      .where('email_key', '=', emailKey)
      .executeTakeFirst();
    return row
      ? {
          email: row.email,
          mobile: row.mobile,
          confirmedAt: row.confirmed_at,
          confirmedOn: row.confirmed_on,
          replaces: row.replaces,
        }
      : undefined;
  }

  /** Whether there was an entry to delete. */
  async delete(emailKey: string): Promise<boolean> {
    const result = await this.db.deleteFrom('contacts').where('email_key', '=', emailKey).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /** Records the number a recipient proved; it replaces the one they proved before. */
  async confirm(
    email: string,
    mobile: string,
    confirmedOn: string | null,
    replaces: string | null,
  ): Promise<ConfirmedMobile> {
    const confirmedAt = new Date(this.clock.now());
    const values = { email, mobile, confirmed_at: confirmedAt, confirmed_on: confirmedOn, replaces };
    await this.db
      .insertInto('confirmed_mobiles')
      .values({ email_key: email.toLowerCase(), ...values })
      .onConflict((oc) => oc.column('email_key').doUpdateSet(values))
      .execute();
    return { email, mobile, confirmedAt, confirmedOn, replaces };
  }

  /**
   * What is on record for each address (lower-cased) that has anything: the number its recipient confirmed and the
   * directory's entry. One statement for a whole message.
   */
  async onRecord(emailKeys: string[]): Promise<Map<string, OnRecord>> {
    const result = new Map<string, OnRecord>();
    if (emailKeys.length === 0) return result;
    // Two primary-key lookups in one statement (a join of the two tables would scan them).
    const rows = await this.db
      .selectFrom('confirmed_mobiles')
      .select([
        'email_key',
        'mobile',
        sql<'confirmed' | 'directory'>`'confirmed'`.as('source'),
        'replaces',
        sql<Language | null>`null`.as('language'),
      ])
      .where('email_key', 'in', emailKeys)
      .unionAll((eb) =>
        eb
          .selectFrom('contacts')
          .select([
            'email_key',
            'mobile',
            sql<'confirmed' | 'directory'>`'directory'`.as('source'),
            sql<string | null>`null`.as('replaces'),
            'language',
          ])
          .where('email_key', 'in', emailKeys),
      )
      .execute();
    for (const row of rows) {
      const entry = result.get(row.email_key) ?? {};
      if (row.source === 'confirmed') entry.confirmed = { mobile: row.mobile, replaces: row.replaces };
      else entry.directory = { mobile: row.mobile, language: row.language };
      result.set(row.email_key, entry);
    }
    return result;
  }
}
