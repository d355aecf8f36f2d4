import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The documents the code and the documentation point at are in the repository, and every pointer lands
 * on a heading: a comment that says `docs/design.md#delivery` must find `## Delivery` in docs/design.md.
 * Documents kept outside the repository (a design note, a seed specification, a style guide) and issue
 * numbers mean nothing to someone reading a checkout, so they may not be cited at all.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where code and scripts live: `docs/<file>.md#<anchor>` references in them are checked. */
const CODE_DIRS = ['src', 'web', 'test', 'bench', 'scripts'];
/** Everything a reader of the repository reads: no citation of documents outside it, no issue numbers. */
const ALL_PATHS = [...CODE_DIRS, 'docs', 'deploy', '.ci', 'README.md'];
const TEXT = /\.(ts|js|mjs|cjs|md|sh|yml|yaml|json|jsonc|conf|html|css|txt)$|(^|\/)\.ci\/[^.]+$/;
const SKIP_DIRS = new Set(['node_modules', '.git', 'dist', 'data', 'test-output']);
/** This file names what it forbids, as examples. */
const SELF = relative(ROOT, fileURLToPath(import.meta.url));

/** A reference in code: `docs/design.md#delivery` (also inside `../docs/…` links). */
const CODE_REFERENCE = /\bdocs\/([A-Za-z0-9._-]+\.md)#([A-Za-z0-9_-]+)/g;
/** A link with an anchor in Markdown: `[x](operating.md#node)`, `[x](#codes)`, `[x](../docs/design.md#sealing)`. */
const MARKDOWN_LINK = /\]\(((?:[^()\s#]+\.md)?)#([^()\s]+)\)/g;
/** Documents outside the repository, and issue numbers. */
const FORBIDDEN = /DESIGN\.md|SEED-?SPEC|STYLE\.md|\b[Ii]ssues? #?\d+/;

async function filesUnder(path: string): Promise<string[]> {
  const absolute = join(ROOT, path);
  const info = await stat(absolute).catch(() => undefined);
  if (!info) return [];
  if (info.isFile()) return TEXT.test(path) ? [path] : [];
  const found: string[] = [];
  for (const entry of await readdir(absolute, { withFileTypes: true })) {
    if (entry.isDirectory() && (SKIP_DIRS.has(entry.name) || entry.name.startsWith('.lint-probe'))) continue;
    if (entry.isDirectory() || entry.isFile()) found.push(...(await filesUnder(join(path, entry.name))));
  }
  return found;
}

/**
 * GitHub's anchor for a heading (github-slugger): the text as rendered (link targets and HTML tags
 * dropped), lower-cased, punctuation removed, each space a hyphen.
 */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]*>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings, outside fenced code, with GitHub's -1, -2 for repeats. */
function anchors(markdown: string): Set<string> {
  const result = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

const anchorCache = new Map<string, Promise<Set<string> | undefined>>();
function anchorsOf(file: string): Promise<Set<string> | undefined> {
  let cached = anchorCache.get(file);
  if (!cached) {
    cached = readFile(file, 'utf8').then(anchors, () => undefined);
    anchorCache.set(file, cached);
  }
  return cached;
}

interface Reference {
  from: string;
  line: number;
  target: string;
  anchor: string;
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

async function codeReferences(): Promise<Reference[]> {
  const references: Reference[] = [];
  for (const dir of CODE_DIRS) {
    for (const file of await filesUnder(dir)) {
      const text = await readFile(join(ROOT, file), 'utf8');
      for (const match of text.matchAll(CODE_REFERENCE)) {
        references.push({
          from: file,
          line: lineOf(text, match.index),
          target: join(ROOT, 'docs', match[1]!),
          anchor: match[2]!,
        });
      }
    }
  }
  return references;
}

async function markdownReferences(): Promise<Reference[]> {
  const references: Reference[] = [];
  for (const path of ALL_PATHS) {
    for (const file of (await filesUnder(path)).filter((f) => f.endsWith('.md'))) {
      const text = await readFile(join(ROOT, file), 'utf8');
      for (const match of text.matchAll(MARKDOWN_LINK)) {
        const target = match[1] ? resolve(dirname(join(ROOT, file)), match[1]) : join(ROOT, file);
        references.push({ from: file, line: lineOf(text, match.index), target, anchor: decodeURIComponent(match[2]!) });
      }
    }
  }
  return references;
}

async function broken(references: Reference[]): Promise<string[]> {
  const problems: string[] = [];
  for (const reference of references) {
    const where = `${reference.from}:${reference.line}`;
    const target = relative(ROOT, reference.target);
    const headings = await anchorsOf(reference.target);
    if (!headings) problems.push(`${where}: ${target} does not exist`);
    else if (!headings.has(reference.anchor)) problems.push(`${where}: ${target} has no heading #${reference.anchor}`);
  }
  return problems;
}

describe('references to the documentation', () => {
  it('slugs headings the way GitHub does', () => {
    assert.equal(slug('Retries and bounces'), 'retries-and-bounces');
    assert.equal(slug('Seal service (B)'), 'seal-service-b');
    assert.equal(
      slug('What the real server refuses, refused at configuration'),
      'what-the-real-server-refuses-refused-at-configuration',
    );
    assert.equal(slug('`SEAL_MASTER_KEY` and the seal'), 'seal_master_key-and-the-seal');
    assert.equal(slug('The [SMTP](x.md) door'), 'the-smtp-door');
    assert.deepEqual([...anchors('# A\n## Node\n```\n## Not a heading\n```\n### Node\n')], ['a', 'node', 'node-1']);
  });

  it('docs/<file>.md#<anchor> in src, test, bench and scripts names a heading that exists', async () => {
    const references = await codeReferences();
    // Guards against a scan that silently finds nothing (a wrong folder, a broken pattern).
    assert.ok(references.length >= 50, `only ${references.length} references found`);
    for (const doc of ['design.md', 'specification.md']) {
      assert.ok(
        references.some((r) => relative(ROOT, r.target) === join('docs', doc)),
        `nothing refers to docs/${doc}`,
      );
    }
    assert.deepEqual(await broken(references), []);
  });

  it('links with an anchor in the Markdown files land on a heading', async () => {
    const references = await markdownReferences();
    assert.ok(references.length > 0, 'no Markdown link with an anchor found');
    assert.deepEqual(await broken(references), []);
  });

  it('nothing cites documents kept outside the repository, or issue numbers', async () => {
    const offenders: string[] = [];
    for (const path of ALL_PATHS) {
      for (const file of (await filesUnder(path)).filter((f) => f !== SELF)) {
        const lines = (await readFile(join(ROOT, file), 'utf8')).split('\n');
        lines.forEach((line, i) => {
          if (FORBIDDEN.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
        });
      }
    }
    assert.deepEqual(offenders, []);
  });

  it('catches what it is meant to catch', () => {
    for (const text of ['see DESIGN.md', 'SEED-SPEC "Errors"', '(issue 7)', "Issue 6's bound", 'issue #12']) {
      assert.ok(FORBIDDEN.test(text), text);
    }
    for (const text of ['an issue with the relay', 'issues/ folder', 'docs/design.md#delivery']) {
      assert.ok(!FORBIDDEN.test(text), text);
    }
    const found = [...'a (docs/design.md#sealing) b ../docs/specification.md#auth-service'.matchAll(CODE_REFERENCE)];
    assert.deepEqual(
      found.map((m) => `${m[1]}#${m[2]}`),
      ['design.md#sealing', 'specification.md#auth-service'],
    );
  });
});
