import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIOME = join(ROOT, 'node_modules/.bin/biome');

async function lint(paths: string[]): Promise<{ code: number; output: string }> {
  return promisify(execFile)(BIOME, ['lint', '--error-on-warnings', '--colors=off', ...paths], { cwd: ROOT }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
  );
}

// The linter is part of the suite, so a change that leaves a finding behind does not land (`npm run lint`).
describe('npm run lint (Biome, recommended rules, biome.jsonc)', () => {
  it('finds nothing in src, test, bench, scripts and bin', async () => {
    const result = await lint([]);
    assert.equal(result.code, 0, result.output);
  });

  it('fails on a finding, so the check above can fail', async () => {
    const dir = await mkdtemp(join(ROOT, 'test/.lint-probe-'));
    try {
      const probe = join(dir, 'probe.ts');
      await writeFile(probe, 'export function probe(list: number[]): number {\n  let total = 0;\n  list.forEach((n) => (total += n));\n  return total == 3 ? 1 : 0;\n}\n');
      const result = await lint([probe]);
      assert.notEqual(result.code, 0, result.output);
      assert.match(result.output, /noDoubleEquals/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
