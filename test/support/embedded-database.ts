import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A fresh PGlite folder costs an initdb, 2.5–5 s of CPU here, and the suite starts dozens of Sealpost
 * processes on the embedded defaults. Each gets a copy of one initialised, still empty folder instead
 * (about 0.3 s): the same files initdb would write, since they depend only on the PGlite version. The
 * migrations still run in the process, as on a first start. Tests of the first start itself opt out.
 */
export async function seedEmbeddedDatabase(dataDir: string): Promise<void> {
  const target = join(dataDir, 'pg');
  if (existsSync(target)) return;
  await cp(await template(), target, { recursive: true });
}

let made: Promise<string> | undefined;

function template(): Promise<string> {
  made ??= (async () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    const version: string = manifest.dependencies['@electric-sql/pglite'];
    const path = join(tmpdir(), `sealpost-pglite-template-${version}`);
    if (existsSync(path)) return path;
    // Built beside and renamed into place, so that a test run that stops halfway, or one running at the
    // same time, never sees a half-written template.
    const building = `${path}.${randomUUID()}`;
    const { PGlite } = await import('@electric-sql/pglite');
    const db = await PGlite.create(building);
    await db.query('select 1');
    await db.close();
    await rename(building, path).catch(async (error: NodeJS.ErrnoException) => {
      await rm(building, { recursive: true, force: true });
      if (!existsSync(path)) throw error;
    });
    return path;
  })();
  return made;
}
