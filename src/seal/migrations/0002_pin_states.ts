import { sql, type Kysely } from 'kysely';

/**
 * Pins are followed until they hold: a 200 to POST /pins only means the cluster accepted the pin.
 * States become `pinning` (accepted, not yet held), `pinned` and `pin_error` (refused, unreachable or
 * failed in IPFS; the old `failed`). `overdue_at` records when a seal was first reported as not pinned
 * everywhere past SEAL_PIN_DEADLINE, so the error is logged once per pin.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.updateTable('sealed_pins').set({ status: 'pin_error' }).where('status', '=', 'failed').execute();
  await db.schema.alterTable('sealed_pins').addColumn('overdue_at', 'timestamptz').execute();
  await db.schema.dropIndex('sealed_pins_due').execute();
  // The follower's question (which pins are due) and the admin list (which are not pinned): both only
  // ever look at the few rows that are not pinned.
  await db.schema
    .createIndex('sealed_pins_open')
    .on('sealed_pins')
    .column('next_attempt_at')
    .where(sql.ref('status'), '<>', 'pinned')
    .execute();
}
