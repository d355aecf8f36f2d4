import type { Kysely } from 'kysely';

/**
 * The intake has one way to make a message durable (docs/design.md#durability-of-intake): its payload first,
 * then its row. The `storing` rows of the overlapped way, written while their payload was stored and never
 * acknowledged (their senders got no 250/202), go with their status rows; a payload of theirs is then the
 * orphan sweep's. So does the index that found them. The `payload_pending` column of rows written beside
 * their put stays, unread, while instances of the previous release may still write it during a rolling
 * upgrade; a later release drops it (docs/operating.md#upgrades).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db
    .deleteFrom('message_status')
    .where('envelope_id', 'in', (qb: Kysely<any>) =>
      qb.selectFrom('envelopes').select('id').where('status', '=', 'storing'),
    )
    .execute();
  await db.deleteFrom('envelopes').where('status', '=', 'storing').execute();
  await db.schema.dropIndex('envelopes_storing').ifExists().execute();
}
