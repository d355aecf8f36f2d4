import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../kernel/logger.ts';

// This module runs from src/auth (through tsx) or from dist/server/auth (the compiled server of
// `npm run build`): both name the same project folder.
const PROJECT_ROOT = new URL(import.meta.url.includes('/dist/server/') ? '../../../' : '../../', import.meta.url);

/** Sources of the reader page (browser code, web/reader) and where `npm run build` puts the page. */
export const READER_SOURCE_DIR = fileURLToPath(new URL('web/reader/', PROJECT_ROOT));
export const READER_DIST_DIR = fileURLToPath(new URL('dist/reader/', PROJECT_ROOT));

export interface BuiltReader {
  outDir: string;
  /** The files written, relative to outDir. */
  files: string[];
}

/**
 * Bundles the reader page with esbuild: app-<hash>.js and .css, frame-<hash>.css (the message frame's
 * stylesheet) and index.html naming them. Content hashes in the names let the assets be cached for a
 * year while index.html is revalidated. Written to a temporary folder and renamed into place, so a
 * running service (or a second build at the same time) never sees half a page.
 */
export async function buildReader(outDir: string = READER_DIST_DIR): Promise<BuiltReader> {
  // Loaded only when building: a service whose page is built never needs esbuild in memory.
  const esbuild = await import('esbuild');
  const staging = `${outDir.replace(/\/+$/, '')}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { recursive: true });
  try {
    const result = await esbuild.build({
      entryPoints: { app: join(READER_SOURCE_DIR, 'main.ts'), frame: join(READER_SOURCE_DIR, 'frame.css') },
      outdir: staging,
      entryNames: '[name]-[hash]',
      bundle: true,
      minify: true,
      sourcemap: 'linked',
      format: 'iife',
      // Phones a few years old: iOS 15 (2021) and the Chrome and Firefox of then.
      target: ['es2020', 'chrome96', 'firefox95', 'safari15'],
      legalComments: 'none',
      charset: 'utf8',
      metafile: true,
      logLevel: 'silent',
    });
    const names: Record<string, string> = {};
    for (const [path, output] of Object.entries(result.metafile.outputs)) {
      const name = relative(staging, join(process.cwd(), path));
      if (output.entryPoint?.endsWith('main.ts')) {
        names['app.js'] = name;
        if (output.cssBundle) names['app.css'] = relative(staging, join(process.cwd(), output.cssBundle));
      } else if (output.entryPoint?.endsWith('frame.css')) {
        names['frame.css'] = name;
      }
    }
    const template = await readFile(join(READER_SOURCE_DIR, 'index.html'), 'utf8');
    const html = template.replace(/\{\{([a-z.]+)\}\}/g, (_, key: string) => {
      const name = names[key];
      if (!name) throw new Error(`reader build: no output for {{${key}}}`);
      return name;
    });
    await writeFile(join(staging, 'index.html'), html);
    await swapIn(staging, outDir);
    return { outDir, files: ['index.html', ...Object.values(names)] };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

async function swapIn(staging: string, outDir: string): Promise<void> {
  const target = outDir.replace(/\/+$/, '');
  await mkdir(dirname(target), { recursive: true });
  const old = `${target}.old-${process.pid}-${randomBytes(4).toString('hex')}`;
  await rename(target, old).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  try {
    await rename(staging, target);
  } catch (error) {
    // Another build put its page there in between: that one is as good as ours.
    if ((error as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    await rm(staging, { recursive: true, force: true });
  }
  await rm(old, { recursive: true, force: true });
}

/**
 * The page for the auth service: built on the spot when dist/reader is missing (a fresh clone's
 * `npm start`; esbuild takes about 100 ms) or older than its sources (a checkout that moved on), else
 * as built. Undefined when there is no page and none can be built (a read-only image without a
 * build): the service then answers /m/{id} with a clear 503.
 */
export async function prepareReaderPage(logger: Logger, outDir: string = READER_DIST_DIR): Promise<{ dir: string } | undefined> {
  const index = join(outDir, 'index.html');
  const built = await stat(index).then(
    (s) => s.mtimeMs,
    () => undefined,
  );
  const sources = await newestSource(READER_SOURCE_DIR);
  if (built !== undefined && (sources === undefined || sources <= built)) return { dir: outDir };

  const started = Date.now();
  logger.info({ dir: outDir }, built === undefined ? 'reader page not built yet: building it (npm run build)' : 'reader page older than its sources: rebuilding it (npm run build)');
  try {
    await buildReader(outDir);
    logger.info({ dir: outDir, ms: Date.now() - started }, 'reader page built');
  } catch (error) {
    if (built !== undefined) {
      logger.warn({ err: error, dir: outDir }, 'reader page could not be rebuilt; serving the one built before');
      return { dir: outDir };
    }
    logger.error({ err: error, dir: outDir }, 'reader page could not be built; /m/{id} answers 503 until `npm run build` has run');
    return undefined;
  }
  return { dir: outDir };
}

/** The latest change time among the page's sources; undefined when they are not there (an image with dist only). */
async function newestSource(dir: string): Promise<number | undefined> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => undefined);
  if (!entries) return undefined;
  let newest: number | undefined;
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const { mtimeMs } = await stat(join(entry.parentPath, entry.name));
    newest = Math.max(newest ?? 0, mtimeMs);
  }
  return newest;
}
