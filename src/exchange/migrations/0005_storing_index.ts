import { sql, type Kysely } from 'kysely';

/**
 * The rows of intakes under way (status `storing`, docs/design.md#durability-of-intake), found by index:
 * the acknowledgement of each accepted message looks its row up among them, and the abandoned-intake
 * sweep looks for old ones. They are few at any moment. Without this index both read every envelope: the
 * planner takes a batch of ids from jsonb_to_recordset for 100 rows, and up to some tens of thousands of
 * envelopes a full read looked cheaper than 100 lookups. At 4,000 envelopes that made an acknowledgement
 * 3.9 ms instead of 0.5 (bench/RESULTS.md, "The acknowledgement by index").
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('envelopes_storing')
    .on('envelopes')
    .column('updated_at')
    .where(sql.ref('status'), '=', 'storing')
    .execute();
}
