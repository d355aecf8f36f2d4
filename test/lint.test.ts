import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { longLines, MAX_LINE, projectLongLines } from '../scripts/line-length.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIOME = join(ROOT, 'node_modules/.bin/biome');

/** `biome check`: the formatter's check and the linter, as `npm run lint` runs them. */
async function lint(paths: string[]): Promise<{ code: number; output: string }> {
  return promisify(execFile)(BIOME, ['check', '--error-on-warnings', '--colors=off', ...paths], { cwd: ROOT }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      output: error.stdout + error.stderr,
    }),
  );
}

// The linter is part of the suite, so a change that leaves a finding behind does not land (`npm run lint`).
describe('npm run lint (Biome, recommended rules, biome.jsonc)', () => {
  it('finds nothing in src, web, test, bench, scripts and bin, and nothing to format', async () => {
    const result = await lint([]);
    assert.equal(result.code, 0, result.output);
  });

  it('fails on a finding, so the check above can fail', async () => {
    const dir = await mkdtemp(join(ROOT, 'test/.lint-probe-'));
    try {
      const probe = join(dir, 'probe.ts');
      await writeFile(
        probe,
        'export function probe(list: number[]): number {\n' +
          '  let total = 0;\n' +
          '  list.forEach((n) => (total += n));\n' +
          '  return total == 3 ? 1 : 0;\n' +
          '}\n',
      );
      const result = await lint([probe]);
      assert.notEqual(result.code, 0, result.output);
      assert.match(result.output, /noDoubleEquals/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('fails on an import circle, though both of its imports are `import type`', async () => {
    const dir = await mkdtemp(join(ROOT, 'test/.lint-probe-'));
    try {
      const room = join(dir, 'room.ts');
      const other = join(dir, 'other-room.ts');
      await writeFile(
        room,
        "import type { OtherRoom } from './other-room.ts';\n\nexport interface Room {\n  next: OtherRoom;\n}\n",
      );
      await writeFile(
        other,
        "import type { Room } from './room.ts';\n\nexport interface OtherRoom {\n  back: Room;\n}\n",
      );
      const result = await lint([room, other]);
      assert.notEqual(result.code, 0, result.output);
      assert.match(result.output, /noImportCycles/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('fails on code the formatter would change', async () => {
    const dir = await mkdtemp(join(ROOT, 'test/.lint-probe-'));
    try {
      const probe = join(dir, 'probe.ts');
      await writeFile(probe, 'export const probe = {a:1,b:"two"}\n');
      const result = await lint([probe]);
      assert.notEqual(result.code, 0, result.output);
      assert.match(result.output, /format/i);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('lines of at most 120 characters (scripts/line-length.ts)', () => {
  it('finds no longer line in src, web, test, bench, scripts and bin', () => {
    assert.deepEqual(projectLongLines(), []);
  });

  it('counts code, comments and literals alike, in characters rather than bytes', () => {
    const long = 'x'.repeat(MAX_LINE);
    const text = [
      `const a = ${long.length} + ${'1 + '.repeat(30)}1;`,
      `// ${long}`,
      `it('${long}', async () => {});`,
      `const t = \`${long} \${a}\`;`,
      `const r = /${long}/;`,
      `const e = '${'é'.repeat(MAX_LINE - 13)}';`,
      `const f = '${'é'.repeat(MAX_LINE - 12)}';`,
    ].join('\n');
    assert.deepEqual(
      longLines(text).map(({ line }) => line),
      [1, 2, 3, 4, 5, 7],
    );
  });
});
