import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// tsx strips types without checking them, so without this a type error (or a spec error code the
// reader page has no sentence for: texts/en.ts `satisfies` the full list) would pass every other test.
describe('npm run typecheck', () => {
  it('finds no type errors in src, test, bench and scripts (tsc --noEmit, strict)', async () => {
    const result = await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.json'], { cwd: ROOT }).then(
      () => ({ code: 0, stdout: '' }),
      (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
    );
    assert.equal(result.code, 0, result.stdout);
  });
});
