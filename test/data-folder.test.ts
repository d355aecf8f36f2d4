import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase } from './support/postgres.ts';
import { postSeal, rawMessage, standInEnv, startStandIn } from './support/seal.ts';
import { SEALPOST_BIN, startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';

const run = promisify(execFile);

/**
 * One process per embedded data folder (docs/decisions.md#one-process-per-data-folder): a second
 * `sealpost` on the folder is refused before it opens the PGlite database, and the first one's sealed
 * mail stays readable; services started apart on one folder share its generated tokens.
 */
describe('the data folder', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });
  async function dataDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-folder-'));
    dirs.push(dir);
    return dir;
  }
  const serviceToken = async (dir: string) => (await readFile(join(dir, 'service-token'), 'utf8')).trim();
  async function readable(sealpost: SealpostProcess, token: string, ids: string[]): Promise<number[]> {
    return Promise.all(
      ids.map(
        async (id) =>
          (
            await fetch(`${sealpost.urls.seal}/v1/sealed/${id}/content`, {
              headers: { authorization: `Bearer ${token}` },
            })
          ).status,
      ),
    );
  }

  it("refuses a second process on the same folder, naming it and the holder; the first one's mail stays", async () => {
    const dir = await dataDir();
    const first = await startSealpostProcess({ SEALPOST_DATA_DIR: dir });
    const token = await serviceToken(dir);
    const ids: string[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const sealed = await postSeal(
          { url: first.urls.seal, serviceToken: token },
          rawMessage({ subject: `No ${i}` }),
        );
        assert.equal(sealed.status, 201, await sealed.clone().text());
        ids.push(((await sealed.json()) as { id: string }).id);
      }

      await assert.rejects(
        startSealpostProcess({ SEALPOST_DATA_DIR: dir }, { freshDatabase: true }),
        (error: Error) => {
          assert.match(
            error.message,
            new RegExp(`SEALPOST_DATA_DIR=${dir} is in use by another Sealpost: process ${first.child.pid} on `),
          );
          assert.match(error.message, /set DATABASE_URL \(PostgreSQL\) and the same ADMIN_TOKEN and SERVICE_TOKEN/);
          assert.doesNotMatch(error.message, /Sealpost is running/);
          return true;
        },
      );
      // `sealpost migrate` opens the same database: refused too.
      await assert.rejects(
        run(process.execPath, [SEALPOST_BIN, 'migrate'], {
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', SEALPOST_DATA_DIR: dir },
        }),
        (error: { code: number; stderr: string }) => {
          assert.equal(error.code, 1);
          assert.match(error.stderr, new RegExp(`is in use by another Sealpost: process ${first.child.pid} `));
          return true;
        },
      );
      assert.deepEqual(await readable(first, token, ids), [200, 200, 200, 200, 200]);
    } finally {
      assert.equal(await first.stop(), 0);
    }
    assert.equal(existsSync(join(dir, 'sealpost.lock')), false, 'a clean stop frees the folder');

    // After a restart every message is still there; a kill -9 leaves a lock whose holder is gone,
    // which the next start takes over.
    const again = await startSealpostProcess({ SEALPOST_DATA_DIR: dir });
    assert.deepEqual(await readable(again, token, ids), [200, 200, 200, 200, 200]);
    await again.stop('SIGKILL');
    assert.equal(existsSync(join(dir, 'sealpost.lock')), true);
    const afterKill = await startSealpostProcess({ SEALPOST_DATA_DIR: dir });
    try {
      assert.deepEqual(await readable(afterKill, token, ids), [200, 200, 200, 200, 200]);
      assert.equal(await serviceToken(dir), token, 'the same generated token on every start');
    } finally {
      assert.equal(await afterKill.stop(), 0);
    }
  });

  it('gives services started as separate processes on one folder the same generated tokens', async () => {
    const dir = await dataDir();
    const database = await createTestDatabase('folder');
    const standIn = await startStandIn();
    const started: SealpostProcess[] = [];
    try {
      const env = { SEALPOST_DATA_DIR: dir, DATABASE_URL: database.url };
      const seal = await startSealpostProcess({ ...env, ...standInEnv(standIn) }, { which: 'seal' });
      started.push(seal);
      const exchange = await startSealpostProcess(
        { ...env, SEAL_URL: seal.urls.seal, DELIVERY_ENABLED: 'false' },
        { which: 'exchange' },
      );
      started.push(exchange);
      const generated = (process: SealpostProcess) =>
        /Generated SERVICE_TOKEN=(\S+)/.exec(process.stdout() + process.stderr())?.[1] ?? 'none';
      assert.equal(generated(seal), generated(exchange), 'one SERVICE_TOKEN for both');
      assert.equal(generated(seal), await serviceToken(dir));
      // The exchange's token is one the seal service takes.
      const sealed = await postSeal({ url: seal.urls.seal, serviceToken: generated(exchange) }, rawMessage());
      assert.equal(sealed.status, 201, await sealed.clone().text());
    } finally {
      for (const process of started) await process.stop();
      await standIn.close();
      await database.drop();
    }
  });
});
