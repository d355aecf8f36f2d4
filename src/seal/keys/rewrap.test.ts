import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { systemClock } from '../../kernel/clock.ts';
import { migrateSchema, openDatabase } from '../../kernel/db/index.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { environmentKey } from '../crypto/environment-key.ts';
import { Keyring } from '../crypto/keyring.ts';
import { CLUSTER_PASS_LABEL, messageKeyLabel } from '../crypto/secret-box.ts';
import { migrations } from '../migrations/index.ts';
import type { SealTables } from '../tables.ts';
import { KeyStore } from './key-store.ts';
import { Rewrapper } from './rewrapper.ts';

const one = {
  version: 1,
  source: 'environment' as const,
  variable: 'SEAL_MASTER_KEY',
  key: environmentKey(randomBytes(32)),
};
const two = {
  version: 2,
  source: 'environment' as const,
  variable: 'SEAL_MASTER_KEYS',
  key: environmentKey(randomBytes(32)),
};
const before1 = new Keyring(1, [one]);
const after2 = new Keyring(2, [one, two]);
const logger = createLogger({ level: 'silent' });

describe('the re-wrap of a key rotation', () => {
  let database: { url: string; drop(): Promise<void> };
  let handle: Awaited<ReturnType<typeof openDatabase>>;
  let db: Kysely<SealTables>;
  let store: KeyStore;

  /** A running message whose key version 1 wrapped; its plain key is returned to check the unwrap. */
  async function sealUnderOne(options: { expiresAt?: Date; wrappedKey?: string } = {}) {
    const id = randomUUID();
    const key = randomBytes(32);
    await db
      .insertInto('sealed_messages')
      .values({
        id,
        envelope_id: randomUUID(),
        cid: `Qm${id}`,
        wrapped: false,
        file_name: 'message.eml',
        sha256: 'ab'.repeat(32),
        size: 1,
        wrapped_key: options.wrappedKey ?? before1.wrap(key, messageKeyLabel(id)),
        key_version: 1,
        sender: 'a@b.example',
        subject: 's',
        expires_at: options.expiresAt ?? null,
      })
      .execute();
    return { id, key };
  }

  const rewrapper = () =>
    new Rewrapper({ store, keyring: after2, intervalMs: 60_000, ratePerSecond: 1000, clock: systemClock, logger });

  before(async () => {
    database = await createTestDatabase('seal_rewrap');
    handle = await openDatabase({ url: database.url, poolSize: 4 });
    await migrateSchema(handle.db, { schema: 'seal', migrations });
    db = handle.db.withSchema('seal') as Kysely<SealTables>;
    store = new KeyStore(db, systemClock);
  });
  after(async () => {
    await handle?.close();
    await database?.drop();
  });
  beforeEach(async () => {
    await db.deleteFrom('seal_key_rotations').execute();
    await db.deleteFrom('sealed_messages').execute();
    await db.deleteFrom('cluster_configs').execute();
  });

  it('re-wraps each key once when two instances run the pass at the same time', async () => {
    const sealed = await Promise.all(Array.from({ length: 120 }, () => sealUnderOne()));
    await db
      .insertInto('cluster_configs')
      .values({
        clusters: JSON.stringify([
          { host: 'c1', port: '9094', user: 'u', passEncrypted: before1.wrap(Buffer.from('pw'), CLUSTER_PASS_LABEL) },
        ]),
      })
      .execute();
    await store.requestRotation(2);
    const [a, b] = [rewrapper(), rewrapper()];
    const done = await Promise.all([a.runOnce(), b.runOnce()]);
    // One instance held the lease and did it all; the other found it taken.
    assert.deepEqual(
      [...done].sort((x, y) => x - y),
      [0, 121],
    );
    const rotation = await store.rotation(2);
    assert.equal(rotation?.rewrapped, 121);
    assert.ok(rotation?.finishedAt);
    const rows = await db.selectFrom('sealed_messages').select(['id', 'wrapped_key', 'key_version']).execute();
    for (const { id, key } of sealed) {
      const row = rows.find((entry) => entry.id === id)!;
      assert.equal(row.key_version, 2);
      assert.match(row.wrapped_key!, /^k2\./);
      assert.deepEqual(new Keyring(2, [two]).unwrap(row.wrapped_key!, messageKeyLabel(id)), key);
    }
    const [config] = await store.clusterConfigs();
    assert.equal(
      new Keyring(2, [two]).unwrap(config!.clusters[0]!.passEncrypted!, CLUSTER_PASS_LABEL).toString(),
      'pw',
    );
    assert.deepEqual(await store.remaining(), [{ version: 2, messages: 120, clusterPasswords: 1 }]);
  });

  it('never brings back a key destroyed meanwhile, nor writes over a key re-wrapped by another', async () => {
    const { id, key } = await sealUnderOne();
    await store.requestRotation(2);
    const [read] = await store.wrappedByOthers(2, 10, undefined);
    const rewrapped = after2.wrap(after2.unwrap(read!.wrappedKey, messageKeyLabel(id)), messageKeyLabel(id));
    // Withdrawn between the read and the write: the key stays destroyed.
    await db.updateTable('sealed_messages').set({ wrapped_key: null }).where('id', '=', id).execute();
    assert.equal(await store.replaceMessageKey(id, read!.wrappedKey, rewrapped, 2), false);
    const row = await db.selectFrom('sealed_messages').select('wrapped_key').where('id', '=', id).executeTakeFirst();
    assert.equal(row?.wrapped_key, null);
    // Another instance was first: the stale value no longer matches, nothing is written or counted twice.
    const other = await sealUnderOne();
    const [stale] = await store.wrappedByOthers(2, 10, undefined);
    const first = after2.wrap(key, messageKeyLabel(other.id));
    assert.equal(await store.replaceMessageKey(other.id, stale!.wrappedKey, first, 2), true);
    assert.equal(await store.replaceMessageKey(other.id, stale!.wrappedKey, after2.wrap(key, 'x'), 2), false);
    assert.equal((await store.rotation(2))?.rewrapped, 1);
  });

  it('leaves expired messages alone, keeps the rotation open over a key that does not unwrap', async () => {
    await sealUnderOne({ expiresAt: new Date(Date.now() - 1000) });
    const broken = await sealUnderOne({
      wrappedKey: new Keyring(1, [{ ...one, key: environmentKey(randomBytes(32)) }]).wrap(randomBytes(32), 'x'),
    });
    const fine = await sealUnderOne();
    await store.requestRotation(2);
    assert.equal(await rewrapper().runOnce(), 1);
    const rotation = await store.rotation(2);
    assert.equal(rotation?.finishedAt, null, 'a key left behind keeps the rotation open');
    assert.deepEqual(await store.remaining(), [
      { version: 1, messages: 1, clusterPasswords: 0 },
      { version: 2, messages: 1, clusterPasswords: 0 },
    ]);
    const versions = await db.selectFrom('sealed_messages').select(['id', 'key_version']).orderBy('id').execute();
    assert.equal(versions.find((row) => row.id === fine.id)?.key_version, 2);
    assert.equal(versions.find((row) => row.id === broken.id)?.key_version, 1);
  });

  it('waits while another instance holds the lease, and takes it over once it ran out', async () => {
    await sealUnderOne();
    await store.requestRotation(2);
    assert.equal(await store.lease(2, new Date(Date.now() + 60_000), 'another-instance'), true);
    assert.equal(await rewrapper().runOnce(), 0);
    await db
      .updateTable('seal_key_rotations')
      .set({ lease_until: new Date(Date.now() - 1) })
      .execute();
    assert.equal(await rewrapper().runOnce(), 1);
    assert.ok((await store.rotation(2))?.finishedAt);
  });

  it('refuses a version that is another key than the one that first wrapped under its number', async () => {
    await store.checkVersions(after2);
    await store.checkVersions(after2);
    const impostor = new Keyring(2, [one, { ...two, key: environmentKey(randomBytes(32)) }]);
    await assert.rejects(
      store.checkVersions(impostor),
      /^Error: SEAL_MASTER_KEYS: key version 2 is not the key that version 2 wrapped with before/,
    );
  });
});
