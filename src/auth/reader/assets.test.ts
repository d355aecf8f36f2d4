import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../kernel/logger.ts';
import { prepareReaderPage } from './assets.ts';

describe('the reader page build', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('builds the page at start when it is missing, and leaves an up-to-date build alone', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sealpost-reader-build-'));
    dirs.push(root);
    const outDir = join(root, 'dist', 'reader');
    const logger = createLogger({ level: 'silent', name: 'test' });

    const page = await prepareReaderPage(logger, outDir);
    assert.deepEqual(page, { dir: outDir });
    const html = await readFile(join(outDir, 'index.html'), 'utf8');
    // index.html names the content-hashed files, and they are there.
    const assets = [...html.matchAll(/\/reader\/((app|frame)-[A-Z0-9]{8}\.(js|css))/g)].map((m) => m[1]!);
    assert.deepEqual(assets.map((a) => a.replace(/-[A-Z0-9]{8}/, '')).sort(), ['app.css', 'app.js', 'frame.css']);
    for (const asset of assets) assert.ok((await stat(join(outDir, asset))).size > 0, asset);
    assert.match(await readFile(join(outDir, assets.find((a) => a.endsWith('.js'))!), 'utf8'), /one-time-code/);

    const builtAt = (await stat(join(outDir, 'index.html'))).mtimeMs;
    assert.deepEqual(await prepareReaderPage(logger, outDir), { dir: outDir });
    assert.equal((await stat(join(outDir, 'index.html'))).mtimeMs, builtAt, 'not rebuilt');
  });
});
