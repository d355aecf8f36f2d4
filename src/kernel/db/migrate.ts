import { Migrator, sql, type Kysely, type Migration } from 'kysely';

/** A service's versioned migrations; names sort in the order they apply (`0001_envelopes`, ...). */
export interface SchemaMigrations {
  schema: string;
  migrations: Record<string, Migration>;
}

/**
 * Applies a service's pending migrations inside its own PostgreSQL schema; the migration history
 * (kysely_migration) lives in that schema too, so services never share tables.
 * Safe to run from several instances at once: the schema is created under an advisory lock and
 * Kysely's migrator takes its own lock for the migrations.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run on Kysely<any>, as Kysely's migrator expects
export async function migrateSchema(db: Kysely<any>, { schema, migrations }: SchemaMigrations): Promise<string[]> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`Invalid schema name ${schema}`);
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('sealpost.create_schema'))`.execute(trx);
    await sql`create schema if not exists ${sql.id(schema)}`.execute(trx);
  });
  const migrator = new Migrator({
    db: db.withSchema(schema),
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName;
    throw new Error(
      `Migration ${schema}/${failed ?? '?'} failed: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
  return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName);
}
