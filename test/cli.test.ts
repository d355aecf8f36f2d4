import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SEALPOST_BIN, startSealpostProcess } from './support/sealpost-process.ts';
import { createTestDatabase } from './support/postgres.ts';

const run = promisify(execFile);

describe('sealpost start all on the embedded defaults', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('comes up with nothing configured, says where each service listens, and stops cleanly on SIGTERM', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-cli-'));
    dirs.push(dataDir);
    const first = await startSealpostProcess({ SEALPOST_DATA_DIR: dataDir });
    const banner = first.stdout();
    assert.match(banner, new RegExp(`auth +${first.urls.auth}`));
    assert.match(banner, new RegExp(`seal +${first.urls.seal}`));
    assert.match(banner, new RegExp(`exchange +${first.urls.exchange} +API description ${first.urls.exchange}/swagger/`));
    assert.match(banner, /PGlite database in .*\/pg/);
    assert.match(banner, /objects on local disk in .*\/objects/);
    assert.match(banner, /IPFS Cluster stand-in at http:\/\/127\.0\.0\.1:\d+/);
    assert.match(banner, /Generated ADMIN_TOKEN=\S+/);

    for (const url of Object.values(first.urls)) {
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
      const ready = await fetch(`${url}/readyz`);
      assert.equal(ready.status, 200, `${url}/readyz: ${await ready.clone().text()}`);
      assert.equal((await fetch(`${url}/metrics`)).status, 200);
    }
    assert.equal((await fetch(`${first.urls.exchange}/swagger/`)).status, 200);

    assert.equal(await first.stop('SIGTERM'), 0);
    assert.match(first.stdout() + first.stderr(), /"msg":"stopped"/);
    // Every port is free again: a second start on the same data folder reuses the database.
    const second = await startSealpostProcess({ SEALPOST_DATA_DIR: dataDir });
    assert.doesNotMatch(second.stdout(), /migrations applied/, 'migrations ran on the first start only');
    assert.equal(await second.stop('SIGINT'), 0);
  });
});

describe('sealpost command line', () => {
  it('refuses to start with a bad variable and names it, its value and what was expected', async () => {
    await assert.rejects(run(process.execPath, [SEALPOST_BIN, 'start', 'all'], { env: { ...process.env, SMS_CODE_EXPIRATION: '15 minutes' } }), (error: any) => {
      assert.equal(error.code, 1);
      assert.match(error.stderr, /SMS_CODE_EXPIRATION="15 minutes" is not valid: expected a duration string/);
      return true;
    });
  });

  it('refuses an unknown service name', async () => {
    await assert.rejects(run(process.execPath, [SEALPOST_BIN, 'start', 'mail']), (error: any) => {
      assert.equal(error.code, 2);
      assert.match(error.stderr, /unknown service "mail"/);
      return true;
    });
  });

  it('runs the migrations alone with `sealpost migrate`', async () => {
    const database = await createTestDatabase('cli');
    try {
      const { stdout } = await run(process.execPath, [SEALPOST_BIN, 'migrate'], {
        env: { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'info' },
      });
      assert.match(stdout, /migrations up to date/);
    } finally {
      await database.drop();
    }
  });

  it('prints the variable table', async () => {
    const { stdout } = await run(process.execPath, [SEALPOST_BIN, 'config', '--markdown']);
    assert.match(stdout, /\| `SMS_CODE_EXPIRATION` \| A \|/);
  });
});
