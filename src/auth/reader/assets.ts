import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../kernel/logger.ts';

// This module runs from src/auth (through tsx) or from dist/server/auth (the compiled server of
// `npm run build`): both name the same project folder.
const COMPILED = import.meta.url.includes('/dist/server/');
const PROJECT_ROOT = new URL(COMPILED ? '../../../../' : '../../../', import.meta.url);

/** Sources of the reader page (browser code, web/reader) and where `npm run build` puts the page. */
export const READER_SOURCE_DIR = fileURLToPath(new URL('web/reader/', PROJECT_ROOT));
export const READER_DIST_DIR = fileURLToPath(new URL('dist/reader/', PROJECT_ROOT));
/** The sender's page (/sent) in dist/reader, beside the reader's index.html: one build, two pages. */
export const SENDER_PAGE = 'sender.html';

export interface BuiltReader {
  outDir: string;
  /** The files written, relative to outDir. */
  files: string[];
}

/**
 * The page for the auth service: dist/reader as built. Run from its sources (`npm start`, the tests), the
 * service also builds it on the spot when it is missing (a fresh clone; esbuild takes about 100 ms) or
 * older than its sources (a checkout that moved on). The compiled server never builds: it runs where
 * esbuild, a development dependency, is not installed, with the page built beside it by `npm run build`.
 * Undefined when there is no page and none can be built: the service then answers /m/{id} with a clear 503.
 */
export async function prepareReaderPage(
  logger: Logger,
  outDir: string = READER_DIST_DIR,
): Promise<{ dir: string } | undefined> {
  const index = join(outDir, 'index.html');
  const built = await stat(index).then(
    (s) => s.mtimeMs,
    () => undefined,
  );
  const sources = COMPILED ? undefined : await newestSource(READER_SOURCE_DIR);
  if (built !== undefined && (sources === undefined || sources <= built)) return { dir: outDir };
  if (COMPILED || sources === undefined) {
    logger.error({ dir: outDir }, 'reader page not built; /m/{id} answers 503 until `npm run build` has run');
    return undefined;
  }

  const started = Date.now();
  logger.info(
    { dir: outDir },
    built === undefined
      ? 'reader page not built yet: building it (npm run build)'
      : 'reader page older than its sources: rebuilding it (npm run build)',
  );
  try {
    await (await loadBuilder()).buildReader(outDir);
    logger.info({ dir: outDir, ms: Date.now() - started }, 'reader page built');
  } catch (error) {
    if (built !== undefined) {
      logger.warn({ err: error, dir: outDir }, 'reader page could not be rebuilt; serving the one built before');
      return { dir: outDir };
    }
    logger.error(
      { err: error, dir: outDir },
      'reader page could not be built; /m/{id} answers 503 until `npm run build` has run',
    );
    return undefined;
  }
  return { dir: outDir };
}

/**
 * The build script (scripts/build-reader.ts, which loads esbuild), named by a path made at run time rather
 * than imported: tsc then leaves scripts/ out of the server's build, and nothing of the server reaches
 * esbuild but this call, which only a service run from its sources makes.
 */
async function loadBuilder(): Promise<{ buildReader(outDir: string): Promise<BuiltReader> }> {
  return import(new URL('scripts/build-reader.ts', PROJECT_ROOT).href);
}

/** The latest change time among the page's sources; undefined when they are not there. */
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
