import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import type { Database } from '../../kernel/db/index.ts';
import type { ExchangeTables } from '../tables.ts';
import {
  enqueueEnvelopes,
  fillQueue,
  openExchangeTestDatabase,
  type ExchangeTestDatabase,
} from '../../../test/support/exchange-delivery.ts';
import { fullReadsOf, planNodes } from '../../../test/support/plans.ts';
import { acknowledgeStatement, createEnvelopeAcknowledger } from './envelope-writer.ts';

describe('the acknowledgement of accepted messages', () => {
  let testDb: ExchangeTestDatabase;
  let database: Database;
  let db: Kysely<ExchangeTables>;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_acknowledge', 2);
    ({ database, db } = testDb);
  });
  after(async () => {
    await testDb?.close();
  });

  it('finds the rows being stored by index among thousands of envelopes, not by reading them all', async () => {
    const storing = await enqueueEnvelopes(db, 2, 'storing');
    await fillQueue(database.db, { waiting: 5000 });

    const rows = storing.map((id) => ({ id, size: 10, accepted_detail: 'accepted', routed_detail: 'routed' }));
    const compiled = acknowledgeStatement(db, JSON.stringify(rows)).compile();
    // The plan for these values, and the generic plan the prepared statement settles on (for any values).
    for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
      const nodes = await planNodes(database.db, compiled, mode);
      assert.ok(
        nodes.some((n) => n['Relation Name'] === 'envelopes'),
        'the plan reads envelopes',
      );
      assert.deepEqual(fullReadsOf(nodes, 'envelopes'), [], mode);
    }

    const acknowledge = createEnvelopeAcknowledger(db);
    const done = await Promise.all(
      storing.map((id) => acknowledge({ id, size: 10, acceptedDetail: 'accepted', routedDetail: 'routed' })),
    );
    assert.deepEqual(done, [true, true]);
    const statuses = await db.selectFrom('envelopes').select('status').where('id', 'in', storing).execute();
    assert.deepEqual(
      statuses.map((row) => row.status),
      ['accepted', 'accepted'],
    );
  });
});
