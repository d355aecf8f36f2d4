import type { Kysely } from 'kysely';

/**
 * Whether a message has a line over 998 octets (RFC 5322 §2.1.1), found as it is accepted: the relay
 * re-encodes the parts that have one (docs/decisions.md#relayed-bytes-within-the-rfcs) and reads the others
 * as a stream. Rows of the previous release read false: they are relayed as before.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('envelopes')
    .addColumn('long_lines', 'boolean', (col) => col.notNull().defaultTo(false))
    .execute();
}
