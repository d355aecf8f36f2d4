/**
 * The page half of `npm run build`: bundles the reader page (web/reader, browser code) and the sender's page
 * (web/reader/sender, a second entry sharing the reader's helpers) with esbuild into static files in
 * dist/reader, which the auth service serves. Run this after changing the page; the auth
 * service also runs it by itself at start when it runs from its sources and dist/reader is missing or
 * older than them (src/auth/reader/assets.ts). esbuild is a development dependency: a production install
 * (`npm ci --omit=dev`) has dist/reader built beforehand and never loads this file.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { READER_DIST_DIR, READER_SOURCE_DIR, SENDER_PAGE, type BuiltReader } from '../src/auth/reader/assets.ts';

/** Each page's template in web/reader and the file it becomes in dist/reader. */
const PAGES: Array<[template: string, page: string]> = [
  ['index.html', 'index.html'],
  [join('sender', 'index.html'), SENDER_PAGE],
];

/**
 * Bundles the pages: app-<hash>.js and .css, frame-<hash>.css (the message frame's stylesheet) and index.html
 * naming them (the reader's, /m/{id}); sender-<hash>.js and .css and sender.html (the sender's, /sent).
 * Content hashes in the names let the assets be cached for a year while the pages are revalidated. Written
 * to a temporary folder and renamed into place, so a running service (or a second build at the same time)
 * never sees half a page.
 */
export async function buildReader(outDir: string = READER_DIST_DIR): Promise<BuiltReader> {
  const staging = `${outDir.replace(/\/+$/, '')}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { recursive: true });
  try {
    const result = await esbuild.build({
      entryPoints: {
        app: join(READER_SOURCE_DIR, 'main.ts'),
        frame: join(READER_SOURCE_DIR, 'frame.css'),
        sender: join(READER_SOURCE_DIR, 'sender/main.ts'),
      },
      outdir: staging,
      entryNames: '[name]-[hash]',
      bundle: true,
      minify: true,
      sourcemap: 'linked',
      format: 'iife',
      // Phones a few years old: iOS 15 (2021) and the Chrome and Firefox of then (web/reader/tsconfig.json
      // holds the page to the built-ins they have).
      target: ['es2020', 'chrome96', 'firefox95', 'safari15'],
      legalComments: 'none',
      charset: 'utf8',
      metafile: true,
      logLevel: 'silent',
    });
    const names: Record<string, string> = {};
    for (const [path, output] of Object.entries(result.metafile.outputs)) {
      const name = relative(staging, join(process.cwd(), path));
      const entry = output.entryPoint ? relative(READER_SOURCE_DIR, join(process.cwd(), output.entryPoint)) : undefined;
      if (entry === 'main.ts' || entry === join('sender', 'main.ts')) {
        const page = entry === 'main.ts' ? 'app' : 'sender';
        names[`${page}.js`] = name;
        if (output.cssBundle) names[`${page}.css`] = relative(staging, join(process.cwd(), output.cssBundle));
      } else if (output.entryPoint?.endsWith('frame.css')) {
        names['frame.css'] = name;
      }
    }
    for (const [template, page] of PAGES) {
      const html = (await readFile(join(READER_SOURCE_DIR, template), 'utf8')).replace(
        /\{\{([a-z.]+)\}\}/g,
        (_, key: string) => {
          const name = names[key];
          if (!name) throw new Error(`reader build: no output for {{${key}}} in ${template}`);
          return name;
        },
      );
      await writeFile(join(staging, page), html);
    }
    await swapIn(staging, outDir);
    return { outDir, files: [...PAGES.map(([, page]) => page), ...Object.values(names)] };
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
    if ((error as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (error as NodeJS.ErrnoException).code !== 'EEXIST')
      throw error;
    await rm(staging, { recursive: true, force: true });
  }
  await rm(old, { recursive: true, force: true });
}

// Run as a command (`npm run build`), not when the auth service or a test imports the functions above.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const built = await buildReader(process.argv[2] ?? READER_DIST_DIR);
  process.stdout.write(
    `reader page built in ${Date.now() - started} ms: ${built.outDir}\n${built.files.map((f) => `  ${f}\n`).join('')}`,
  );
}
