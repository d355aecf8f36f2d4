import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildReader } from '../scripts/build-reader.ts';
import { SEALPOST_BUILT, startSealpostProcess } from './support/sealpost-process.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('the compiled server of `npm run build` (what the Dockerfile runs)', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('compiles src to plain JavaScript whose relative imports name .js files', async () => {
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
    });
    const start = await readFile(join(ROOT, 'dist/server/cli/start.js'), 'utf8');
    assert.match(start, /import\(['"]\.\.\/auth\/service\.js['"]\)/, 'lazy service imports rewritten too');
    const files = (await readdir(join(ROOT, 'dist/server'), { recursive: true })).filter((f) => f.endsWith('.js'));
    assert.ok(files.length > 50, `${files.length} files`);
    assert.ok(!files.some((f) => f.endsWith('.test.js')), 'no tests in the build');
    for (const file of files) {
      const text = await readFile(join(ROOT, 'dist/server', file), 'utf8');
      assert.doesNotMatch(text, /from ['"]\.{1,2}\/[^'"]*\.ts['"]/, `${file} imports a .ts file`);
    }
  });

  it('starts all three services with plain node, serves the reader and sender pages, and stops cleanly', async () => {
    // The other half of `npm run build`: the compiled server serves the page built beside it, never builds it.
    await buildReader();
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-built-'));
    dirs.push(dataDir);
    const sealpost = await startSealpostProcess({ SEALPOST_DATA_DIR: dataDir }, { built: true });
    try {
      assert.equal(sealpost.child.spawnargs[1], SEALPOST_BUILT);
      for (const url of Object.values(sealpost.urls)) {
        const ready = await fetch(`${url}/readyz`);
        assert.equal(ready.status, 200, `${url}/readyz: ${await ready.clone().text()}`);
      }
      const page = await fetch(`${sealpost.urls.auth}/m/${randomUUID()}`);
      assert.equal(page.status, 200);
      assert.match(
        await page.text(),
        /<script[^>]+src="[^"]*app-[A-Z0-9]+\.js"/i,
        'the reader page found from dist/server',
      );
      const sent = await fetch(`${sealpost.urls.auth}/sent`);
      assert.equal(sent.status, 200);
      assert.match(await sent.text(), /<script[^>]+src="[^"]*sender-[A-Z0-9]+\.js"/i, "the sender's page too");
    } finally {
      assert.equal(await sealpost.stop('SIGTERM'), 0);
    }
  });
});
