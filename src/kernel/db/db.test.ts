import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Migration } from 'kysely';
import { migrateSchema, type Database } from './index.ts';
import { dropSchemas, openTestPglite, openTestPostgres, uniqueSchema } from '../../../test/support/postgres.ts';

const migrations: Record<string, Migration> = {
  '0001_things': {
    up: async (db) => {
      await db.schema
        .createTable('things')
        .addColumn('id', 'bigserial', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
    },
  },
  '0002_things_name_index': {
    up: async (db) => {
      await db.schema.createIndex('things_name').on('things').column('name').execute();
    },
  },
};

// The same suite on both engines: the embedded default (PGlite) and the real server (docs/design.md#storage).
for (const [engine, open] of [
  ['PostgreSQL', openTestPostgres],
  ['PGlite', openTestPglite],
] as const) {
  describe(`database on ${engine}`, () => {
    let database: Database;
    const schema = uniqueSchema('kernel_db');
    const other = uniqueSchema('kernel_db_other');

    before(async () => {
      database = await open();
    });
    after(async () => {
      await dropSchemas(database, schema, other);
      await database.close();
    });

    it('applies versioned migrations inside the service schema, in order, once', async () => {
      assert.deepEqual(await migrateSchema(database.db, { schema, migrations }), [
        '0001_things',
        '0002_things_name_index',
      ]);
      assert.deepEqual(await migrateSchema(database.db, { schema, migrations }), []);
      const tables = await sql<{ table_name: string }>`
        select table_name from information_schema.tables where table_schema = ${schema} order by table_name`.execute(
        database.db,
      );
      assert.deepEqual(
        tables.rows.map((r) => r.table_name),
        ['kysely_migration', 'kysely_migration_lock', 'things'],
      );
    });

    it('applies a migration added later without re-running the old ones', async () => {
      const later = {
        ...migrations,
        '0003_things_note': {
          up: async (db: any) => void (await db.schema.alterTable('things').addColumn('note', 'text').execute()),
        },
      };
      assert.deepEqual(await migrateSchema(database.db, { schema, migrations: later }), ['0003_things_note']);
    });

    it('keeps services apart: the same table name in two schemas holds different rows', async () => {
      await migrateSchema(database.db, { schema: other, migrations });
      await database.db.withSchema(schema).insertInto('things').values({ name: 'mine', size: 1 }).execute();
      const theirs = await database.db.withSchema(other).selectFrom('things').selectAll().execute();
      assert.equal(theirs.length, 0);
    });

    it('returns the same types on both engines: int8 as number, timestamptz as Date', async () => {
      const big = 5 * 1024 ** 3;
      const row = await database.db
        .withSchema(schema)
        .insertInto('things')
        .values({ name: 'big', size: big })
        .returningAll()
        .executeTakeFirstOrThrow();
      assert.equal(typeof row.id, 'number');
      assert.equal(row.size, big);
      assert.ok(row.created_at instanceof Date);
    });

    it('rolls a failed transaction back whole', async () => {
      const scoped = database.db.withSchema(schema);
      await assert.rejects(
        scoped.transaction().execute(async (trx) => {
          await trx.insertInto('things').values({ name: 'half', size: 1 }).execute();
          await trx
            .insertInto('things')
            .values({ name: null as unknown as string, size: 1 })
            .execute();
        }),
      );
      const rows = await scoped.selectFrom('things').select('name').where('name', '=', 'half').execute();
      assert.equal(rows.length, 0);
    });

    it('rejects a migration set whose migration fails, naming it', async () => {
      const broken = {
        '0001_bad': { up: async (db: any) => void (await sql`select * from no_such_table`.execute(db)) },
      };
      await assert.rejects(
        migrateSchema(database.db, { schema: uniqueSchema('kernel_db_bad'), migrations: broken }),
        /0001_bad/,
      );
    });
  });
}

describe('database on PostgreSQL with several instances', () => {
  it('lets two instances migrate the same schema at once without error or double application', async () => {
    const [a, b] = await Promise.all([openTestPostgres(), openTestPostgres()]);
    const schema = uniqueSchema('kernel_db_race');
    try {
      const [first, second] = await Promise.all([
        migrateSchema(a.db, { schema, migrations }),
        migrateSchema(b.db, { schema, migrations }),
      ]);
      assert.deepEqual([...first, ...second].sort(), ['0001_things', '0002_things_name_index']);
    } finally {
      await dropSchemas(a, schema);
      await Promise.all([a.close(), b.close()]);
    }
  });
});
