/**
 * The reader half of `npm run build`: bundles the reader page (web/reader) into dist/reader with esbuild. The auth
 * service builds it by itself at start when dist/reader is missing; run this after changing the page.
 */
import { buildReader, READER_DIST_DIR } from '../src/auth/reader-assets.ts';

const started = Date.now();
const built = await buildReader(process.argv[2] ?? READER_DIST_DIR);
process.stdout.write(`reader page built in ${Date.now() - started} ms: ${built.outDir}\n${built.files.map((f) => `  ${f}\n`).join('')}`);
