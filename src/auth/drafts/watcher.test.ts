import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { migrateSchema, openDatabase, type Database } from '../../kernel/db/index.ts';
import { createLogger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import { createS3ObjectStore } from '../../kernel/objects/s3.ts';
import { migrations } from '../migrations/index.ts';
import type { AuthTables } from '../tables.ts';
import { draftObjectKey } from '../attachments/upload.ts';
import { DraftStore, type DraftOwner } from './store.ts';
import { ExpiredDraftsWatcher } from './watcher.ts';
import { signInAlice, startAuthHarness } from '../../../test/support/auth-harness.ts';
import { uploadFile } from '../../../test/support/multipart-upload.ts';
import { createTestDatabase } from '../../../test/support/postgres.ts';
import { startS3Server, uniqueBucket, type S3TestServer } from '../../../test/support/s3-server.ts';

const HOUR = 3_600_000;
const T = new Date('2026-11-20T08:00:00Z');
const at = (ms: number) => new Date(T.getTime() + ms);
const silent = createLogger({ level: 'silent' });

/** The object store with every delete counted per key (and slowed a little, so that watchers overlap). */
function countingDeletes(objects: ObjectStore, delayMs = 0) {
  const deleted = new Map<string, number>();
  const store: ObjectStore = Object.create(objects);
  store.delete = async (key: string) => {
    if (delayMs) await sleep(delayMs);
    await objects.delete(key);
    deleted.set(key, (deleted.get(key) ?? 0) + 1);
  };
  return { store, deleted };
}

describe('the expired-attachments watcher', () => {
  let s3: S3TestServer;
  let fresh: { url: string; drop(): Promise<void> };
  let database: Database;
  let db: Kysely<AuthTables>;
  let objects: ObjectStore;
  let drafts: DraftStore;
  let owners = 0;

  const newOwner = (): DraftOwner => ({ messageId: `msg-${++owners}`, emailKey: 'alice@example.com' });
  const exists = async (key: string) => (await objects.head(key)) !== undefined;

  /** A draft with `count` stored files, all of it last changed at `when`. */
  async function draftWithFiles(
    owner: DraftOwner,
    count: number,
    when: Date,
  ): Promise<{ draftId: string; keys: string[] }> {
    let draftId = '';
    const keys: string[] = [];
    for (let i = 0; i < count; i++) {
      const begun = await drafts.beginUpload(
        owner,
        (id) => {
          const fileId = randomUUID();
          return {
            id: fileId,
            objectKey: draftObjectKey(id, fileId),
            filename: `file-${i}.txt`,
            contentType: 'text/plain',
          };
        },
        1_000_000,
        when,
      );
      assert.ok(typeof begun === 'object');
      draftId = begun.draftId;
      await objects.put(begun.file.objectKey, Buffer.from(`file ${i} of ${owner.messageId}`));
      assert.equal(
        typeof (await drafts.completeUpload(
          begun.draftId,
          begun.file.id,
          { size: 20, contentType: 'text/plain', detectedType: null, scanned: true },
          1_000_000,
          when,
        )),
        'object',
        'stored',
      );
      keys.push(begun.file.objectKey);
    }
    return { draftId, keys };
  }

  before(async () => {
    s3 = await startS3Server();
    fresh = await createTestDatabase('auth_watcher');
    database = await openDatabase({ url: fresh.url, poolSize: 8 });
    await migrateSchema(database.db, { schema: 'auth', migrations });
    db = database.db.withSchema('auth') as Kysely<AuthTables>;
    const s3Store = createS3ObjectStore({
      endpoint: s3.endpoint,
      region: s3.region,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: true,
      bucket: uniqueBucket('watcher'),
    });
    await s3Store.ensureBucket();
    objects = s3Store;
    drafts = new DraftStore(db, 15 * 60_000);
  });
  after(async () => {
    await objects?.close();
    await database?.close();
    await fresh?.drop();
    await s3?.stop();
  });

  it('keeps the files inside the retention period and deletes objects, rows and draft after it', async () => {
    const owner = newOwner();
    const { draftId, keys } = await draftWithFiles(owner, 2, T);
    const watcher = new ExpiredDraftsWatcher({ db, objects, retentionMs: HOUR, logger: silent });

    assert.deepEqual(await watcher.sweep(at(HOUR - 1)), { drafts: 0, files: 0 });
    assert.equal(await drafts.files(draftId).then((files) => files.length), 2);
    for (const key of keys) assert.ok(await exists(key), `${key} kept inside the period`);

    assert.deepEqual(await watcher.sweep(at(HOUR + 1)), { drafts: 1, files: 2 });
    for (const key of keys) assert.equal(await exists(key), false, `${key} deleted after the period`);
    assert.equal(await drafts.findOpen(owner), undefined);
    assert.deepEqual(await db.selectFrom('draft_files').select('id').where('draft_id', '=', draftId).execute(), []);
  });

  it('counts the period from the last change: saving the text keeps the files longer', async () => {
    const owner = newOwner();
    const { keys } = await draftWithFiles(owner, 1, T);
    const saved = await drafts.save(owner, { text: 'still writing', html: null, bcc: null }, at(HOUR / 2));
    assert.ok(typeof saved === 'object');
    const watcher = new ExpiredDraftsWatcher({ db, objects, retentionMs: HOUR, logger: silent });

    assert.deepEqual(await watcher.sweep(at(HOUR + 1)), { drafts: 0, files: 0 });
    assert.ok(await exists(keys[0]!));
    assert.deepEqual(await watcher.sweep(at(HOUR + HOUR / 2 + 1)), { drafts: 1, files: 1 });
    assert.equal(await exists(keys[0]!), false);
  });

  it('deletes an upload abandoned half-way once it is older than the period, leaving the draft alone', async () => {
    const owner = newOwner();
    const begun = await drafts.beginUpload(
      owner,
      (id) => ({
        id: randomUUID(),
        objectKey: draftObjectKey(id, 'abandoned'),
        filename: 'x.bin',
        contentType: 'application/octet-stream',
      }),
      1_000_000,
      T,
    );
    assert.ok(typeof begun === 'object');
    await objects.put(begun.file.objectKey, Buffer.from('partial'));
    // The draft is in use (its text saved later), but the upload never finished.
    assert.ok(typeof (await drafts.save(owner, { text: 'hello', html: null, bcc: null }, at(2 * HOUR))) === 'object');
    const watcher = new ExpiredDraftsWatcher({ db, objects, retentionMs: HOUR, logger: silent });

    assert.deepEqual(await watcher.sweep(at(2 * HOUR)), { drafts: 0, files: 1 });
    assert.equal(await exists(begun.file.objectKey), false);
    assert.equal((await drafts.findOpen(owner))?.text, 'hello');
  });

  it('removes what is left of a sent draft at its next run, whatever its age', async () => {
    const owner = newOwner();
    const { draftId, keys } = await draftWithFiles(owner, 1, T);
    await drafts.markSent(draftId, T);
    const watcher = new ExpiredDraftsWatcher({ db, objects, retentionMs: HOUR, logger: silent });
    assert.deepEqual(await watcher.sweep(T), { drafts: 1, files: 1 });
    assert.equal(await exists(keys[0]!), false);
  });

  it('deletes each file exactly once when two watchers run at the same time', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 30; i++) keys.push(...(await draftWithFiles(newOwner(), 2, T)).keys);
    const first = countingDeletes(objects, 5);
    const second = countingDeletes(objects, 5);
    const watchers = [first, second].map(
      (counting) =>
        new ExpiredDraftsWatcher({ db, objects: counting.store, retentionMs: HOUR, logger: silent, batchSize: 3 }),
    );

    const results = await Promise.all(watchers.map((watcher) => watcher.sweep(at(HOUR + 1))));

    const counts = new Map<string, number>();
    for (const { deleted } of [first, second])
      for (const [key, n] of deleted) counts.set(key, (counts.get(key) ?? 0) + n);
    assert.deepEqual([...counts.keys()].sort(), [...keys].sort(), 'every file deleted');
    assert.ok(
      [...counts.values()].every((n) => n === 1),
      `each exactly once: ${JSON.stringify([...counts.values()].filter((n) => n !== 1))}`,
    );
    assert.ok(
      first.deleted.size > 0 && second.deleted.size > 0,
      `both watchers worked (${first.deleted.size} and ${second.deleted.size})`,
    );
    assert.equal(results[0]!.files + results[1]!.files, keys.length);
    assert.equal(results[0]!.drafts + results[1]!.drafts, 30);
    for (const key of keys) assert.equal(await exists(key), false);
    assert.deepEqual(await db.selectFrom('draft_files').select('id').where('object_key', 'in', keys).execute(), []);
  });

  it('runs every EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: an uploaded file stays its period, then goes', async () => {
    const intervalMs = 200;
    const harness = await startAuthHarness({
      s3,
      env: { ATTACHMENTS_RETENTION_PERIOD: '3s', EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: `${intervalMs}ms` },
    });
    try {
      const reader = harness.reader();
      await signInAlice(harness, reader, harness.sealSample().id);
      const uploaded = await uploadFile(reader, { filename: 'notes.txt', content: Buffer.from('draft notes') });
      assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
      const expiresAt = Date.parse((await reader.get('/v1/message/reply')).body.expiresAt);
      const [row] = await harness.auth.database.db
        .withSchema('auth')
        .selectFrom('draft_files')
        .select('object_key')
        .execute();
      const listed = async () => ((await reader.get('/v1/message/files')).body.files as unknown[]).length;

      // Just before the period ends, the watcher (which has run many times by then) has left it alone.
      harness.clock.advance(Math.max(0, expiresAt - 300 - harness.clock.now()));
      assert.equal(await listed(), 1, 'the file is still there 300 ms before the period ends');
      assert.notEqual(await harness.auth.objects.head(row!.object_key), undefined, 'and so is its object');

      // Gone by the end of the period + one interval, with a margin for a sweep under way; never before the end.
      const dueBy = expiresAt + intervalMs + 1_500;
      for (;;) {
        const count = await listed();
        const seenAt = harness.clock.now();
        if (count === 0) {
          assert.ok(seenAt >= expiresAt, `deleted ${expiresAt - seenAt} ms before the period ended`);
          break;
        }
        assert.ok(
          seenAt <= dueBy,
          `still there ${seenAt - expiresAt} ms after the period ended (interval ${intervalMs} ms)`,
        );
        await sleep(50);
      }
      assert.equal(await harness.auth.objects.head(row!.object_key), undefined, 'its object is gone too');
      assert.equal((await reader.get('/v1/message/reply')).body.text, '');
    } finally {
      await harness.stop();
    }
  });
});
