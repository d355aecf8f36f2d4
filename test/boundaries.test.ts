import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AUTH_VARIABLES } from '../src/auth/config.ts';
import { EXCHANGE_VARIABLES } from '../src/exchange/config.ts';
import { SHARED_VARIABLES } from '../src/kernel/config.ts';
import {
  DKIM_VARIABLES,
  NOTIFY_DEFAULT_LANGUAGE,
  OUTBOUND_OUTBOX,
  OUTBOUND_SMTP_URL,
} from '../src/kernel/mail-config.ts';
import { SERVICE_NAMES, variablesOf } from '../src/kernel/variables.ts';
import { SEAL_VARIABLES } from '../src/seal/config.ts';

/**
 * The house's borders, checked on the source: a service talks to another over HTTP only, so it imports
 * nothing of another service; what two services exchange is typed once, in src/contracts (schemas and types
 * only), and the clients that call another service take their types from there instead of writing them again.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const SERVICES: readonly string[] = SERVICE_NAMES;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The folders under src/ that a file's relative imports reach (`kernel`, `contracts`, `auth`, …). */
function importedAreas(file: string): Array<{ specifier: string; area: string }> {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((match) => match[1]!);
  return specifiers.map((specifier) => {
    const target = relative(SRC, resolve(dirname(file), specifier));
    return { specifier, area: target.startsWith('..') ? '(outside src)' : target.split('/')[0]! };
  });
}

const areaOf = (file: string) => relative(SRC, file).split('/')[0]!;

describe('borders between the services', () => {
  it('a service imports only its own code, the kernel and the contracts', () => {
    const crossings = SERVICES.flatMap((service) =>
      sourceFiles(join(SRC, service)).flatMap((file) =>
        importedAreas(file)
          .filter(({ area }) => area !== service && area !== 'kernel' && area !== 'contracts')
          .map(({ specifier }) => `${relative(ROOT, file)} imports ${specifier}`),
      ),
    );
    assert.deepEqual(crossings, []);
  });

  it('the kernel imports no service and no contract; the contracts import only the kernel', () => {
    const kernel = sourceFiles(join(SRC, 'kernel')).flatMap((file) =>
      importedAreas(file)
        .filter(({ area }) => area !== 'kernel')
        .map(({ specifier }) => `${relative(ROOT, file)} imports ${specifier}`),
    );
    const contracts = sourceFiles(join(SRC, 'contracts')).flatMap((file) =>
      importedAreas(file)
        .filter(({ area }) => area !== 'kernel' && area !== 'contracts')
        .map(({ specifier }) => `${relative(ROOT, file)} imports ${specifier}`),
    );
    assert.deepEqual([...kernel, ...contracts], []);
  });

  it('the clients of another service take its types from src/contracts and write none of their own', () => {
    const clients = {
      'src/auth/seal/client.ts': 'contracts/seal.ts',
      'src/auth/exchange/client.ts': 'contracts/exchange.ts',
      'src/exchange/outbound/seal-client.ts': 'contracts/seal.ts',
    };
    for (const [file, contract] of Object.entries(clients)) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      assert.ok(text.includes(`/${contract}'`), `${file} imports ${contract}`);
      assert.doesNotMatch(
        text,
        /^export interface |^interface /m,
        `${file} declares no interface of its own for the other service's data`,
      );
    }
  });

  it('no file outside the seal service spells out the seal record or answer by hand', () => {
    // The fields only the seal service's answers carry together: a hand-written copy would list them.
    const copies = sourceFiles(SRC)
      .filter((file) => !['seal', 'contracts'].includes(areaOf(file)))
      .filter((file) =>
        /\b(interface|type)\s+\w+\s*=?\s*\{[^}]*\bcid\b[^}]*\bsha256\b/s.test(readFileSync(file, 'utf8')),
      )
      .map((file) => relative(ROOT, file));
    assert.deepEqual(copies, []);
  });

  it("the kernel names no service's variable: each service declares its own", () => {
    const kernelOwned = new Set([
      ...variablesOf(SHARED_VARIABLES),
      OUTBOUND_SMTP_URL,
      OUTBOUND_OUTBOX,
      ...variablesOf(DKIM_VARIABLES),
      NOTIFY_DEFAULT_LANGUAGE,
    ]);
    const names = [AUTH_VARIABLES, SEAL_VARIABLES, EXCHANGE_VARIABLES]
      .flatMap(variablesOf)
      .filter((spec) => !kernelOwned.has(spec))
      .map((spec) => spec.name);
    assert.ok(names.includes('AUTH_PUBLIC_URL') && names.includes('SEAL_URL') && names.includes('DELIVERY_LEASE'));
    const pattern = new RegExp(`\\b(${[...new Set(names)].join('|')})\\b`);
    // Its tests too: a kernel test that needs a service's variable belongs beside that service.
    const kernelFiles = readdirSync(join(SRC, 'kernel'), { recursive: true, encoding: 'utf8' }).filter((path) =>
      path.endsWith('.ts'),
    );
    const mentions = kernelFiles
      .map((path) => join(SRC, 'kernel', path))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) =>
            pattern.test(line) ? [`${relative(ROOT, file)}:${i + 1} names ${pattern.exec(line)![1]}`] : [],
          ),
      );
    assert.deepEqual(mentions, []);
  });
});

describe('the border between the reader page and the server', () => {
  const WEB = join(ROOT, 'web');
  /** Every file under `from` that a relative import of a file under `dir` reaches. */
  const reached = (dir: string, from: string) =>
    sourceFiles(dir).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)]
        .map((match) => relative(ROOT, resolve(dirname(file), match[1]!)))
        .filter((target) => target.startsWith(`${from}/`))
        .map((target) => `${relative(ROOT, file)} imports ${target}`),
    );

  it('the page takes from src only what is made for both: the contracts, the languages and the error codes', () => {
    // tsc holds these to no Node (web/reader/tsconfig.json); this keeps the page from reaching further.
    const shared = ['src/contracts/', 'src/kernel/languages.ts', 'src/kernel/error-codes.ts'];
    const reaches = reached(WEB, 'src').filter((line) => !shared.some((path) => line.includes(` imports ${path}`)));
    assert.deepEqual(reaches, []);
  });

  it('the server imports nothing of the page: it serves the files built from it', () => {
    assert.deepEqual(reached(SRC, 'web'), []);
  });
});
