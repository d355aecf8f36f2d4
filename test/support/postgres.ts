import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/kernel/db/index.ts';

/** The machine's PostgreSQL (127.0.0.1:5432, trust auth, database `test`); override for other setups. */
export const TEST_DATABASE_URL = process.env.SEALPOST_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A schema name no other test run uses, so tests on the shared server never see each other's rows. */
export function uniqueSchema(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

export async function openTestPostgres(): Promise<Database> {
  return openDatabase({ url: TEST_DATABASE_URL, poolSize: 4 });
}

/** In-memory PGlite: the embedded default's engine without touching the disk. */
export async function openTestPglite(): Promise<Database> {
  return openDatabase({ url: undefined });
}

export async function dropSchemas(database: Database, ...schemas: string[]): Promise<void> {
  for (const schema of schemas) await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(database.db);
}

/**
 * A fresh database on the test server, for tests that run whole services (whose schema names are
 * fixed): nothing leaks between test files or runs. drop() removes it, closing leftover connections.
 */
export async function createTestDatabase(prefix = 'sealpost'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = uniqueSchema(`${prefix}_test`);
  const admin = await openTestPostgres();
  try {
    await sql`create database ${sql.id(name)}`.execute(admin.db);
  } finally {
    await admin.close();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const admin = await openTestPostgres();
      try {
        await sql`drop database if exists ${sql.id(name)} with (force)`.execute(admin.db);
      } finally {
        await admin.close();
      }
    },
  };
}
