import type { Kysely } from 'kysely';

/**
 * Rows written beside their payload's put (docs/design.md#durability-of-intake): `payload_pending` says that
 * the payload was not yet known to be durable when the row was written. Such a row is claimed by its own
 * instance by id, or by another once its grace is over; a claim that then finds no payload removes the row
 * without a bounce, since its sender was never told 250/202. Adding a column with a constant default
 * rewrites no row (PostgreSQL 11 and later).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('envelopes')
    .addColumn('payload_pending', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
}
