import { sql, type Kysely } from 'kysely';

/**
 * Delivery's additions: the per-recipient report a bounce is built from (kept on the row so that a
 * bounce interrupted by a crash can still be sent by the retention sweep), and an index for that sweep,
 * which looks for finished envelopes whose payload and row were not removed yet.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('envelopes').addColumn('bounce_report', 'jsonb').execute();
  await db.schema
    .createIndex('envelopes_finished')
    .on('envelopes')
    .column('updated_at')
    .where(sql.ref('status'), 'in', ['delivered', 'failed'])
    .execute();
}
