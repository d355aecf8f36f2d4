/**
 * Lines are at most MAX_LINE characters (`npm run lint`, test/lint.test.ts), literals included. The
 * formatter wraps code at that width but never breaks a string, template or regex literal, so a long
 * literal is split by hand with `+` at a word boundary, or hoisted into a named constant. Biome has no
 * line-length rule, hence this check. Characters are counted, not bytes, so "é" is one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAX_LINE = 120;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FOLDERS = ['src', 'web', 'test', 'scripts', 'bench', 'bin'];
const SOURCE = /\.(ts|js|mjs)$/;

export interface LongLine {
  line: number;
  length: number;
}

/** The lines of a source text longer than MAX_LINE characters. */
export function longLines(text: string): LongLine[] {
  const found: LongLine[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    const length = [...line].length;
    if (length > MAX_LINE) found.push({ line: index + 1, length });
  }
  return found;
}

/** Every long line in the project's sources, as `path:line (length)`. */
export function projectLongLines(root = ROOT): string[] {
  const found: string[] = [];
  for (const folder of FOLDERS) {
    const entries = readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' });
    for (const entry of entries.filter((name) => SOURCE.test(name) && !name.includes('node_modules')).sort()) {
      const path = join(root, folder, entry);
      for (const { line, length } of longLines(readFileSync(path, 'utf8'))) {
        found.push(`${relative(root, path)}:${line} (${length} characters)`);
      }
    }
  }
  return found;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = projectLongLines();
  for (const line of found) process.stderr.write(`${line}\n`);
  if (found.length > 0) {
    process.stderr.write(`${found.length} lines longer than ${MAX_LINE} characters\n`);
    process.exitCode = 1;
  }
}
