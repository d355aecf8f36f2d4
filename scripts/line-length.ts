/**
 * Lines are at most MAX_LINE characters (`npm run lint`, test/lint.test.ts). The formatter wraps code at
 * that width but never breaks a string, template or regex literal, so that messages and test names stay
 * whole and can be found with grep; such a literal may carry a line past the width. Everything else on
 * the line must fit, and comments always must. Biome has no line-length rule, hence this check.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const MAX_LINE = 120;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FOLDERS = ['src', 'web', 'test', 'scripts', 'bench', 'bin'];
const SOURCE = /\.(ts|js|mjs)$/;

export interface LongLine {
  line: number;
  length: number;
}

/** The lines of a source text that are too long once their string, template and regex literals are left out. */
export function longLines(path: string, text: string): LongLine[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const literals: Array<[number, number]> = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateExpression(node) ||
      ts.isRegularExpressionLiteral(node)
    ) {
      literals.push([node.getStart(source), node.end]);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const found: LongLine[] = [];
  let start = 0;
  for (const [index, line] of text.split('\n').entries()) {
    const end = start + line.length;
    if (line.length > MAX_LINE) {
      const inLiterals = literals.reduce(
        (sum, [from, to]) => sum + Math.max(0, Math.min(to, end) - Math.max(from, start)),
        0,
      );
      if (line.length - inLiterals > MAX_LINE) found.push({ line: index + 1, length: line.length });
    }
    start = end + 1;
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
      for (const { line, length } of longLines(path, readFileSync(path, 'utf8'))) {
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
    process.stderr.write(`${found.length} lines longer than ${MAX_LINE} characters (literals aside)\n`);
    process.exitCode = 1;
  }
}
