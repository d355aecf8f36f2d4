import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrateSchema, openDatabase } from '../../kernel/db/index.ts';
import { createLogger } from '../../kernel/logger.ts';
import { migrations } from '../migrations/index.ts';
import { exchangeService } from '../service.ts';
import type { ExchangeTables } from '../tables.ts';
import { createStarterRules } from './starter.ts';
import { ruleView, RuleStore } from './store.ts';
import { createTestDatabase, openTestPglite } from '../../../test/support/postgres.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';

const STARTER_LOG = 'created starter delivery rule (embedded default)';

/**
 * Rules as `GET /v1/config` shows them, without ids and times, by name: the two starter rules are
 * created in one transaction, so they tie on priority and creation time (harmless: their channels differ).
 */
async function rulesOf(exchange: ServiceUnderTest) {
  const rules = await new RuleStore(exchange.database.db.withSchema('exchange') as Kysely<ExchangeTables>).list();
  return rules
    .map((rule) => {
      const { name, priority, configuration } = ruleView(rule);
      return { name, priority, configuration };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Tokens production takes (32 characters or more, no placeholder, two different values). */
const PRODUCTION_TOKENS = {
  ADMIN_TOKEN: 'an-admin-token-32-characters-long',
  SERVICE_TOKEN: 'a-service-token-32-characters-long',
};

const starterLogs = (exchange: ServiceUnderTest) => exchange.logs.filter((line) => line.msg === STARTER_LOG);

/** Starts the exchange on `url` (whose database the test owns), runs `check`, stops it again. */
async function withExchange(
  url: string,
  options: { embedded: boolean; env?: Record<string, string> },
  check: (exchange: ServiceUnderTest) => Promise<void>,
) {
  const exchange = await startServiceForTest(exchangeService, {
    databaseUrl: url,
    embedded: options.embedded,
    env: { DELIVERY_ENABLED: 'false', ...options.env },
  });
  try {
    await check(exchange);
  } finally {
    await exchange.stop();
  }
}

describe('starter delivery rules', { timeout: 60_000 }, () => {
  const databases: Array<{ url: string; drop(): Promise<void> }> = [];
  const freshDatabase = async () => {
    const database = await createTestDatabase('exchange_starter');
    databases.push(database);
    return database.url;
  };
  after(async () => {
    for (const database of databases) await database.drop();
  });

  it('are created and logged on the embedded default with a new database, and never again once deleted', async () => {
    const url = await freshDatabase();
    await withExchange(url, { embedded: true }, async (exchange) => {
      const starters = [
        {
          name: 'starter: seal mail tagged [secure], tag removed',
          priority: 90,
          configuration: {
            params: { channel: 'smtp', subjectContains: '[secure]' },
            outbound: ['seal'],
            stripSubjectTag: true,
          },
        },
        {
          name: 'starter: relay replies',
          priority: 100,
          configuration: { params: { channel: 'json' }, outbound: ['smtp'] },
        },
        {
          name: 'starter: seal inbound mail',
          priority: 100,
          configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
        },
      ];
      starters.sort((a, b) => a.name.localeCompare(b.name));
      assert.deepEqual(await rulesOf(exchange), starters);
      const logged = starterLogs(exchange).map((line) => line.rule as { name: string });
      assert.deepEqual(
        logged.sort((a, b) => a.name.localeCompare(b.name)),
        starters,
        'each rule logged',
      );
      // The operator removes them (a restart finds an empty rules table).
      for (const rule of await new RuleStore(
        exchange.database.db.withSchema('exchange') as Kysely<ExchangeTables>,
      ).list()) {
        const res = await fetch(`${exchange.url}/v1/config/${rule.id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${exchange.adminToken}` },
        });
        assert.equal(res.status, 204);
      }
    });
    await withExchange(url, { embedded: true }, async (exchange) => {
      assert.deepEqual(await rulesOf(exchange), [], 'deleted starter rules do not come back');
      assert.deepEqual(starterLogs(exchange), []);
    });
  });

  it('are not created outside the embedded default, nor later on that database', async () => {
    const url = await freshDatabase();
    await withExchange(url, { embedded: false }, async (exchange) => {
      assert.deepEqual(await rulesOf(exchange), []);
      assert.deepEqual(starterLogs(exchange), []);
    });
    await withExchange(url, { embedded: true }, async (exchange) => {
      assert.deepEqual(await rulesOf(exchange), [], 'the database was no longer brand new');
    });
  });

  it('are never created in production mode, even when the caller says embedded', async () => {
    await withExchange(
      await freshDatabase(),
      { embedded: true, env: { NODE_ENV: 'production', ...PRODUCTION_TOKENS } },
      async (exchange) => {
        assert.equal(exchange.config.production, true);
        assert.deepEqual(await rulesOf(exchange), []);
        assert.deepEqual(starterLogs(exchange), []);
      },
    );
  });

  it('are not created on an existing database that an upgrade migrates', async () => {
    const url = await freshDatabase();
    // The schema as a release before the starter-rules migration left it, without rules.
    const database = await openDatabase({ url, poolSize: 1 });
    try {
      await migrateSchema(database.db, {
        schema: 'exchange',
        migrations: { '0001_exchange': migrations['0001_exchange']!, '0002_delivery': migrations['0002_delivery']! },
      });
    } finally {
      await database.close();
    }
    await withExchange(url, { embedded: true }, async (exchange) => {
      assert.deepEqual(await rulesOf(exchange), []);
      assert.deepEqual(starterLogs(exchange), []);
    });
  });

  it("are created once on PGlite, the embedded default's engine, too", async () => {
    const database = await openTestPglite();
    try {
      await migrateSchema(database.db, { schema: 'exchange', migrations });
      const db = database.db.withSchema('exchange') as Kysely<ExchangeTables>;
      const options = { embedded: true, production: false, logger: createLogger({ level: 'silent' }) };
      await createStarterRules(db, options);
      assert.deepEqual((await new RuleStore(db).list()).map((rule) => rule.name).sort(), [
        'starter: relay replies',
        'starter: seal inbound mail',
        'starter: seal mail tagged [secure], tag removed',
      ]);
      await db.deleteFrom('rules').execute();
      await createStarterRules(db, options);
      assert.deepEqual(await new RuleStore(db).list(), []);
    } finally {
      await database.close();
    }
  });
});
