import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { systemClock } from '../../kernel/clock.ts';
import { migrateSchema, openDatabase, type Database } from '../../kernel/db/index.ts';
import { migrations } from '../migrations/index.ts';
import type { SealTables } from '../tables.ts';
import { SealedStore } from './store.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';

describe("the sealed record's statement", () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let store: SealedStore;

  before(async () => {
    testDb = await createTestDatabase('seal_record_statement');
    // One connection: what it has prepared is what pg_prepared_statements shows.
    database = await openDatabase({ url: testDb.url, poolSize: 1 });
    await migrateSchema(database.db, { schema: 'seal', migrations });
    store = new SealedStore(database.db.withSchema('seal') as Kysely<SealTables>, systemClock);
  });
  after(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it('is prepared once on a connection and reads every record, by id and by envelope, whole', async () => {
    const records = [];
    for (const subject of ['first', 'second']) {
      const id = randomUUID();
      const { record } = await store.insert(
        {
          id,
          envelopeId: randomUUID(),
          cid: `bafy-${subject}`,
          wrapped: false,
          fileName: 'message.eml',
          sha256: 'ab'.repeat(32),
          size: 1234,
          wrappedKey: 'v1.key',
          sender: 'alice@sender.example',
          subject,
          expiresAt: null,
        },
        [{ email: 'Bob@rcpt.example', method: 'sms', mobile: '+41791234567' }],
        [
          { cluster: 'primary', status: 'pinned' },
          { cluster: 'backup', status: 'pinning' },
        ],
      );
      records.push(record);
    }
    for (let i = 0; i < 6; i++) {
      for (const record of records) {
        assert.deepEqual(await store.get(record.message.id), record);
        assert.deepEqual(await store.findByEnvelope(record.message.envelope_id), record);
      }
    }
    const prepared = (
      await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(database.db)
    ).rows.filter(({ statement }) => statement.includes('"sealed_messages"'));
    // One statement per column it is looked up by, whatever the number of reads.
    assert.equal(prepared.length, 2);
    assert.ok(
      prepared.every(({ statement }) => !/"m"\.\*/.test(statement)),
      'message columns named, not m.*',
    );
  });
});
