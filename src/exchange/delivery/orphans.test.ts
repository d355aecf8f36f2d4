import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { migrateSchema, openDatabase, type Database } from '../../kernel/db/index.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createLocalObjectStore, type ObjectStore } from '../../kernel/objects/index.ts';
import { payloadKey } from '../handoff.ts';
import { migrations } from '../migrations/index.ts';
import { RuleStore } from '../rules/store.ts';
import type { ExchangeTables } from '../tables.ts';
import { OrphanPayloadSweep } from './orphans.ts';
import { EnvelopeQueue } from './queue.ts';
import { intakeOn, payloadKeys } from '../../../test/support/exchange-delivery.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';

const GRACE_MS = 60_000;

describe('the orphan payload sweep', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let db: Kysely<ExchangeTables>;
  let dir: string;
  let objects: ObjectStore;

  before(async () => {
    [testDb, dir] = await Promise.all([
      createTestDatabase('exchange_orphans'),
      mkdtemp(join(tmpdir(), 'sealpost-orphans-')),
    ]);
    database = await openDatabase({ url: testDb.url, poolSize: 2 });
    await migrateSchema(database.db, { schema: 'exchange', migrations });
    db = database.db.withSchema('exchange') as Kysely<ExchangeTables>;
    objects = createLocalObjectStore({ dir });
    await new RuleStore(db).create({
      name: 'relay',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    });
  });
  after(async () => {
    await objects?.close();
    await database?.close();
    await testDb?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const keys = async () => (await payloadKeys(objects)).sort();
  /** A sweep on the test's clock, with what the instance is still deleting when given. */
  const sweepOn = (clock: { now: number }, deleting?: (key: string) => boolean) =>
    new OrphanPayloadSweep({
      db,
      objects,
      graceMs: GRACE_MS,
      logger: createLogger({ level: 'silent' }),
      now: () => clock.now,
      deleting,
    });
  const accept = (envelopeId: string) =>
    intakeOn(db, objects).accept({
      channel: 'smtp',
      sender: 'a@sender.example',
      recipients: ['b@rcpt.example'],
      payload: Buffer.from('Subject: x\r\n\r\nx\r\n'),
      envelopeId,
    });

  it('deletes a payload that had no envelope at two sweeps a grace period apart, and nothing else', async () => {
    const clock = { now: 0 };
    const sweep = sweepOn(clock);
    const [withEnvelope, orphan, late, fresh] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await accept(withEnvelope);
    // Stored by intakes that never wrote their row (yet): an interrupted one, and a slow one.
    await objects.put(payloadKey(orphan), 'orphan');
    await objects.put(payloadKey(late), 'late');
    // Not a key the intake writes: not ours to judge.
    await objects.put('exchange/payloads/not-an-envelope', 'other');

    assert.equal(await sweep.sweep(), 0, 'the first sighting deletes nothing');
    await accept(late); // The slow intake's row comes after all.
    await objects.put(payloadKey(fresh), 'fresh');
    clock.now += GRACE_MS - 1;
    assert.equal(await sweep.sweep(), 0, 'within the grace period nothing is deleted');

    clock.now += 1;
    assert.equal(await sweep.sweep(), 1);
    assert.deepEqual(
      await keys(),
      [payloadKey(withEnvelope), payloadKey(late), payloadKey(fresh), 'exchange/payloads/not-an-envelope'].sort(),
      'only the orphan went',
    );

    // `fresh` was first seen one sweep after the others: it goes a grace period after that sweep.
    clock.now += GRACE_MS - 2;
    assert.equal(await sweep.sweep(), 0);
    clock.now += 1;
    assert.equal(await sweep.sweep(), 1);
    assert.deepEqual(
      await keys(),
      [payloadKey(withEnvelope), payloadKey(late), 'exchange/payloads/not-an-envelope'].sort(),
    );
  });

  it('deletes the payload of a delivered message whose row went with its mark before the clean-up ran', async () => {
    const clock = { now: 0 };
    const sweep = sweepOn(clock);
    const delivered = randomUUID();
    const waiting = randomUUID();
    await accept(delivered);
    await accept(waiting);
    // As a delivery worker killed between its `delivered` mark and the payload's deletion leaves it.
    const queue = new EnvelopeQueue(db, GRACE_MS);
    const claim = (await queue.claimDue(10)).find((c) => c.id === delivered)!;
    assert.ok(await queue.markDelivered(claim, 'relayed', null));

    assert.equal(await sweep.sweep(), 0, 'the first sighting deletes nothing');
    clock.now += GRACE_MS;
    assert.equal(await sweep.sweep(), 1);
    const left = await keys();
    assert.equal(left.includes(payloadKey(delivered)), false, 'the delivered payload went');
    assert.equal(left.includes(payloadKey(waiting)), true, 'the queued one stayed');
  });

  it('leaves alone a payload whose deletion its instance still holds, however long it waits', async () => {
    const clock = { now: 0 };
    let held = true;
    const id = randomUUID();
    const sweep = sweepOn(clock, (key) => held && key === payloadKey(id));
    await objects.put(payloadKey(id), 'delivered, its row gone, its deletion held');
    assert.equal(await sweep.sweep(), 0);
    clock.now += GRACE_MS;
    assert.equal(await sweep.sweep(), 0, 'not an orphan while its deletion is held');
    assert.ok(await objects.head(payloadKey(id)));
    // Its deletion failed, say: from now on it is the sweep's, after a full grace.
    held = false;
    clock.now += GRACE_MS;
    assert.equal(await sweep.sweep(), 0, 'first seen without a row now');
    clock.now += GRACE_MS;
    assert.equal(await sweep.sweep(), 1);
    assert.equal(await objects.head(payloadKey(id)), undefined);
  });

  it('forgets a suspect that disappears, so a payload written again under its key gets a full grace', async () => {
    const clock = { now: 0 };
    const sweep = sweepOn(clock);
    const id = randomUUID();
    await objects.put(payloadKey(id), 'first');
    assert.equal(await sweep.sweep(), 0);
    await objects.delete(payloadKey(id));
    clock.now += GRACE_MS;
    assert.equal(await sweep.sweep(), 0);
    await objects.put(payloadKey(id), 'again');
    clock.now += GRACE_MS;
    assert.equal(await sweep.sweep(), 0, 'seen once only since it came back');
    assert.ok(await objects.head(payloadKey(id)));
    await objects.delete(payloadKey(id));
  });
});
