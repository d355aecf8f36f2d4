import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataFolderInUse, dataFolderHolder, LOCK_FILE, lockDataFolder } from './data-lock.ts';

describe('the data folder lock', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });
  async function folderWith(holder?: object, ageMs = 0): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-lock-'));
    dirs.push(dir);
    if (holder) {
      const file = join(dir, LOCK_FILE);
      await writeFile(file, JSON.stringify(holder));
      const then = new Date(Date.now() - ageMs);
      await utimes(file, then, then);
    }
    return dir;
  }
  const holder = (pid: number, host = hostname()) => ({ pid, host, command: 'sealpost start all', since: 'then' });

  it('refuses a folder a live process holds, naming the folder, the pid and what to set', async () => {
    // The test runner's parent is alive for as long as this test runs.
    const dir = await folderWith(holder(process.ppid));
    await assert.rejects(lockDataFolder(dir, 'sealpost start all'), (error: Error) => {
      assert.ok(error instanceof DataFolderInUse);
      assert.match(
        error.message,
        new RegExp(`^SEALPOST_DATA_DIR=${dir} is in use by another Sealpost: process ${process.ppid} on `),
      );
      assert.match(error.message, /set DATABASE_URL/);
      return true;
    });
    assert.equal((await dataFolderHolder(dir))?.pid, process.ppid);
  });

  it('takes over a lock whose process is gone, and frees the folder on release', async () => {
    const dir = await folderWith(holder(2 ** 22 + 12345));
    assert.equal(await dataFolderHolder(dir), undefined, 'a dead holder holds nothing');
    const lock = await lockDataFolder(dir, 'sealpost start all');
    assert.equal(JSON.parse(await readFile(lock.file, 'utf8')).pid, process.pid);
    await assert.rejects(
      (async () => {
        // Another process's view: our pid is alive. Written as if by a sibling with our pid on another host.
        const other = await folderWith(holder(process.pid, 'elsewhere'));
        await lockDataFolder(other, 'x');
      })(),
      DataFolderInUse,
      "another host's fresh lock is not judged by pid",
    );
    await lock.release();
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);
  });

  it("takes over another host's lock that nobody refreshed for a minute", async () => {
    const dir = await folderWith(holder(1, 'elsewhere'), 120_000);
    const lock = await lockDataFolder(dir, 'sealpost migrate');
    assert.equal(JSON.parse(await readFile(lock.file, 'utf8')).command, 'sealpost migrate');
    await lock.release();
  });
});
