import { sql, type Kysely } from 'kysely';

/**
 * Remembers that this database is brand new, so that the embedded default creates its starter rules
 * once — on the first start after the schema was created — and never again: an operator who deleted
 * them does not get them back, and an existing database does not get them on upgrade.
 *
 * "Brand new" means 0001 ran in this very migration run. Kysely applies all pending migrations in one
 * transaction on PostgreSQL, so 0001's history row then carries this transaction's id in `xmin`. Were
 * that ever not so, nothing would be marked: no starter rules, the safe side.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('pending_setup')
    .addColumn('task', 'text', (c) => c.primaryKey())
    .execute();
  const fresh = await db
    .selectFrom('kysely_migration')
    .select('name')
    .where('name', '=', '0001_exchange')
    .where(sql<boolean>`xmin = pg_current_xact_id()::xid`)
    .executeTakeFirst();
  if (fresh) await db.insertInto('pending_setup').values({ task: 'starter_rules' }).execute();
}
