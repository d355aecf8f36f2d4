import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openExchangeTestDatabase, type ExchangeTestDatabase } from '../../../test/support/exchange-delivery.ts';
import { fullReadsOf, planNodes } from '../../../test/support/plans.ts';
import { archiveBatch } from './archive.ts';

const HOUR_MS = 3600_000;

describe("the status history's indexes", () => {
  let testDb: ExchangeTestDatabase;

  before(async () => {
    testDb = await openExchangeTestDatabase('exchange_archive_plan', 2);
  });
  after(async () => {
    await testDb?.close();
  });

  it('keeps two indexes on the live history: its key, (envelope_id, id), and a BRIN index of its age', async () => {
    const { rows } = await sql<{ name: string; method: string; columns: string[] }>`
      select i.relname as name, am.amname as method,
        array(select a.attname::text from unnest(x.indkey) with ordinality k(attnum, n)
          join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum order by k.n) as columns
      from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
      where x.indrelid = 'exchange.message_status'::regclass order by i.relname`.execute(testDb.database.db);
    assert.deepEqual(rows, [
      { name: 'message_status_age', method: 'brin', columns: ['created_at'] },
      { name: 'message_status_pkey', method: 'btree', columns: ['envelope_id', 'id'] },
    ]);
  });

  it('finds old rows by the age index and moves them by the key, without reading the whole history', async () => {
    // As a live table grows: the oldest rows first, then many young ones (two per accepted message).
    const rows = (count: number, hoursAgo: number) =>
      sql`insert into exchange.message_status (envelope_id, status, detail, created_at)
        select gen_random_uuid(), 'accepted', 'size 10240 over SMTP', now() - make_interval(hours => ${hoursAgo})
          + make_interval(secs => n) from generate_series(1, ${count}) as n`.execute(testDb.database.db);
    await rows(200, 1000);
    await rows(100_000, 1);
    await sql`analyze exchange.message_status`.execute(testDb.database.db);

    const batch = archiveBatch(testDb.db, new Date(Date.now() - 720 * HOUR_MS), 1000);
    const nodes = await planNodes(testDb.database.db, batch.compile(), 'force_custom_plan');
    assert.deepEqual(fullReadsOf(nodes, 'message_status'), []);
    const indexes = nodes.map((node) => node['Index Name']).filter(Boolean);
    assert.ok(indexes.includes('message_status_age'), `the age index: ${indexes.join(', ')}`);
    assert.ok(indexes.includes('message_status_pkey'), `the key: ${indexes.join(', ')}`);

    const moved = await batch.executeTakeFirst();
    assert.equal(Number(moved.numInsertedOrUpdatedRows), 200);
    const left = await testDb.db
      .selectFrom('message_status')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(left.n), 100_000);
  });
});
