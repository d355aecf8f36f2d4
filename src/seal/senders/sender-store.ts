import { type Kysely, sql } from 'kysely';
import type { MobileSource, SealedMessage, SealTables, SignInMethod } from '../tables.ts';

/** One recipient of a message with what the trail says of them (SenderRecipientSchema before it is written out). */
export interface RecipientSummary {
  sealed_id: string;
  email: string;
  method: SignInMethod;
  mobile_source: MobileSource | null;
  withdrawn_at: Date | null;
  notified_at: Date | null;
  first_opened_at: Date | null;
  last_opened_at: Date | null;
  failed_sign_ins: number;
  downloads: number;
  replies: number;
}

export type SenderMessage = Pick<
  SealedMessage,
  'id' | 'sender' | 'subject' | 'sealed_at' | 'expires_at' | 'ended_at' | 'end_reason' | 'end_note'
>;

const MESSAGE_COLUMNS = [
  'm.id',
  'm.sender',
  'm.subject',
  'm.sealed_at',
  'm.expires_at',
  'm.ended_at',
  'm.end_reason',
  'm.end_note',
] as const;

/**
 * The sealed messages of one sender (docs/specification.md#seal-endpoints-for-the-senders-side). The sender is
 * given as the lower-cased normalised address and compared with the message's sender the same way: another
 * sender's message is not found, exactly as a missing one.
 */
export class SenderStore {
  constructor(private readonly db: Kysely<SealTables>) {}

  /** Newest first; `before` pages back, `q` keeps those with the text in a recipient's address or the subject. */
  async list(senderKey: string, page: { limit: number; before?: Date; q?: string }): Promise<SenderMessage[]> {
    let query = this.db
      .selectFrom('sealed_messages as m')
      .select(MESSAGE_COLUMNS)
      .where(sql<string>`lower(m.sender)`, '=', senderKey)
      .orderBy('m.sealed_at', 'desc')
      .orderBy('m.id')
      .limit(page.limit);
    if (page.before) query = query.where('m.sealed_at', '<', page.before);
    if (page.q !== undefined) {
      // strpos, not LIKE: the sender's text is matched as it is, `%` and `_` included.
      const text = page.q.toLowerCase();
      query = query.where((eb) =>
        eb.or([
          eb(sql<number>`strpos(lower(m.subject), ${text})`, '>', 0),
          eb.exists(
            eb
              .selectFrom('sealed_recipients as r')
              .select('r.sealed_id')
              .whereRef('r.sealed_id', '=', 'm.id')
              .where(sql<number>`strpos(r.email_key, ${text})`, '>', 0),
          ),
        ]),
      );
    }
    return query.execute();
  }

  async message(senderKey: string, id: string): Promise<SenderMessage | undefined> {
    return this.db
      .selectFrom('sealed_messages as m')
      .select(MESSAGE_COLUMNS)
      .where('m.id', '=', id)
      .where(sql<string>`lower(m.sender)`, '=', senderKey)
      .executeTakeFirst();
  }

  /**
   * The recipients of these messages, in their order, each with the times and counts of their trail entries: one
   * statement for a whole page.
   */
  async recipients(ids: string[]): Promise<RecipientSummary[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('sealed_recipients as r')
      .leftJoin('sealed_trail as t', (join) =>
        join.onRef('t.sealed_id', '=', 'r.sealed_id').on(sql<string>`lower(t.recipient)`, '=', sql.ref('r.email_key')),
      )
      .select([
        'r.sealed_id',
        'r.email',
        'r.method',
        'r.mobile_source',
        'r.withdrawn_at',
        sql<Date | null>`min(t.at) filter (where t.event = 'notified')`.as('notified_at'),
        sql<Date | null>`min(t.at) filter (where t.event = 'opened')`.as('first_opened_at'),
        sql<Date | null>`max(t.at) filter (where t.event = 'opened')`.as('last_opened_at'),
        sql<string>`count(t.seq) filter (where t.event = 'sign_in_failed')`.as('failed_sign_ins'),
        sql<string>`count(t.seq) filter (where t.event = 'attachment_downloaded')`.as('downloads'),
        sql<string>`count(t.seq) filter (where t.event = 'reply_sent')`.as('replies'),
      ])
      .where('r.sealed_id', 'in', ids)
      .groupBy(['r.sealed_id', 'r.position', 'r.email', 'r.method', 'r.mobile_source', 'r.withdrawn_at'])
      .orderBy('r.sealed_id')
      .orderBy('r.position')
      .execute();
    return rows.map((row) => ({
      ...row,
      failed_sign_ins: Number(row.failed_sign_ins),
      downloads: Number(row.downloads),
      replies: Number(row.replies),
    }));
  }
}
