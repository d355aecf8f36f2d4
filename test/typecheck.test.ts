import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// tsx strips types without checking them, so without this a type error (or a spec error code the
// reader page has no sentence for: texts/en.ts `satisfies` the full list) would pass every other test.
// Three programs, each with the globals of where its code runs: the server without the DOM, the reader
// page without Node, the tests with both (web/reader/tsconfig.json, test/tsconfig.json).
const PROJECTS = {
  'src, bench and scripts (tsc --noEmit, strict)': 'tsconfig.json',
  'the tests': 'test/tsconfig.json',
  'the reader page, web/reader': 'web/reader/tsconfig.json',
};

function typecheck(project: string): Promise<{ code: number; stdout: string }> {
  return promisify(execFile)(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', project],
    {
      cwd: ROOT,
    },
  ).then(
    () => ({ code: 0, stdout: '' }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
}

describe('npm run typecheck', () => {
  // The three programs are checked side by side (each tsc uses one core), then each test reads its result.
  const results = Object.fromEntries(Object.values(PROJECTS).map((project) => [project, typecheck(project)]));
  for (const [what, project] of Object.entries(PROJECTS)) {
    it(`finds no type errors in ${what}`, async () => {
      const result = await results[project]!;
      assert.equal(result.code, 0, result.stdout);
    });
  }
});
