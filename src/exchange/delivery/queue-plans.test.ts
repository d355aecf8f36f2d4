import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from '../../kernel/db/index.ts';
import type { ExchangeTables } from '../tables.ts';
import { EnvelopeQueue } from './queue.ts';
import {
  fillQueue,
  openExchangeTestDatabase,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';
import { fullReadsOf, planNodes } from '../../../test/support/plans.ts';

/**
 * The claim and the `delivered` mark are prepared statements (compileOnce with `prepare`): PostgreSQL
 * settles on one generic plan for them, which must walk the queue's partial indexes as their custom plans
 * do, however long the backlog.
 */
describe("the delivery queue's prepared statements", () => {
  let testDb: ExchangeTestDatabase;
  let database: Database;
  /** What the queue's statements were, as sent: a second handle on the database that logs its queries. */
  const sent: CompiledQuery[] = [];
  let logged: Kysely<ExchangeTables>;
  let pool: pg.Pool;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_queue_plans', 2);
    database = testDb.database;
    pool = new pg.Pool({ connectionString: testDb.url, max: 2 });
    logged = new Kysely<ExchangeTables>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => {
        if (event.level === 'query') sent.push(event.query);
      },
    }).withSchema('exchange');
    await fillQueue(database.db, { waiting: 19_980, expired: 20 });
  });
  after(async () => {
    await logged?.destroy();
    await testDb?.close();
  });

  it('claims and marks delivered by index, in the generic plan as in the custom one', async () => {
    const queue = new EnvelopeQueue(logged, 60_000);
    const claims = await queue.claimDue(10);
    assert.equal(claims.length, 10);
    assert.equal(claims[0]!.previous_status, 'delivering', 'the expired leases first');
    assert.equal(claims[0]!.status, 'delivering');
    assert.equal(claims[0]!.payload_key.startsWith('key-'), true, 'every column of the envelope comes back');
    const claim = sent.at(-1)!;
    assert.ok(await queue.markDelivered(claims[0]!, 'delivered', null));
    const delivered = sent.at(-1)!;
    assert.match(delivered.sql, /"status" = 'delivered'|set "status" = \$1/);

    for (const [name, compiled] of [
      ['claim', claim],
      ['delivered', delivered],
    ] as const) {
      for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
        const nodes = await planNodes(database.db, compiled, mode);
        assert.deepEqual(fullReadsOf(nodes, 'envelopes'), [], `${name}, ${mode}`);
        if (name === 'claim')
          assert.deepEqual(
            nodes.filter((node) => node['Node Type'] === 'Sort').map((node) => node['Node Type']),
            [],
            `${name}, ${mode}: the due rows come in index order, not sorted`,
          );
      }
    }
  });
});
