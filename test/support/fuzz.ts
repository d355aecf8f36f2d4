import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';

/**
 * The fuzz tests' seed: fixed, so that a run is the same every time and a failure reproduces. Each
 * property derives its own seed from it and its name (the blocks explore different cases), and a failure
 * names the seed with fast-check's counterexample. FUZZ_SEED=<n> explores another set of cases.
 */
export const FUZZ_SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : 20261121;

/** The seed of one property: FUZZ_SEED mixed with its name. */
export function seedFor(name: string): number {
  return (FUZZ_SEED ^ createHash('sha256').update(name).digest().readInt32BE(0)) | 0;
}

/**
 * Runs a property `numRuns` times with its fixed seed. No shrinking: the cases run against live services
 * whose state carries over from case to case, so a shrunk case would not replay the same way; the first
 * failing case is reported as generated, with the seed and path that replay the run.
 */
export async function fuzz<T>(
  name: string,
  arbitrary: fc.Arbitrary<T>,
  numRuns: number,
  check: (value: T) => Promise<void>,
): Promise<void> {
  const seed = seedFor(name);
  const details = await fc.check(fc.asyncProperty(arbitrary, check), { seed, numRuns, endOnFailure: true });
  if (!details.failed) return;
  const reason = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  const example = fc.stringify(details.counterexample);
  const shown = example.length > 4000 ? `${example.slice(0, 4000)}… (${example.length} characters)` : example;
  throw new Error(
    `fuzz "${name}" failed at case ${details.numRuns} of ${numRuns} ` +
      `(replay: fc.assert(..., { seed: ${seed}, path: "${details.counterexamplePath}" }); FUZZ_SEED=${FUZZ_SEED}):\n` +
      `${reason}\ncase: ${shown}`,
    { cause: details.errorInstance },
  );
}

/**
 * The spec's error object `{id, kind, errorCode?, message}` and nothing else but the documented extras
 * (attemptsLeft of a wrong code, cid of a broken seal), `kind` equal to the status. `context` goes into
 * every assertion message (what was sent).
 */
export function assertErrorObject(status: number, body: unknown, context: string): void {
  const shown = `${context}\n→ ${status} ${JSON.stringify(body)?.slice(0, 500)}`;
  assert.ok(body !== null && typeof body === 'object' && !Array.isArray(body), `an error object: ${shown}`);
  const object = body as Record<string, unknown>;
  for (const key of Object.keys(object))
    assert.ok(
      ['id', 'kind', 'errorCode', 'message', 'attemptsLeft', 'cid'].includes(key),
      `unexpected field ${key}: ${shown}`,
    );
  if ('attemptsLeft' in object) {
    assert.ok(Number.isInteger(object.attemptsLeft) && (object.attemptsLeft as number) >= 0, `attemptsLeft: ${shown}`);
    assert.ok(
      object.errorCode === 'incorrect_code' || object.errorCode === 'invalid_code_or_email',
      `attemptsLeft only on a wrong code: ${shown}`,
    );
  }
  if ('cid' in object)
    assert.ok(
      typeof object.cid === 'string' && object.errorCode === 'seal_broken',
      `cid only on seal_broken: ${shown}`,
    );
  assert.equal(typeof object.id, 'string', `id: ${shown}`);
  assert.ok((object.id as string).length > 0, `id: ${shown}`);
  assert.equal(object.kind, status, `kind equals the status: ${shown}`);
  assert.equal(typeof object.message, 'string', `message: ${shown}`);
  assert.ok(object.errorCode === undefined || typeof object.errorCode === 'string', `errorCode: ${shown}`);
}

/** Reads a fetch answer's body: JSON when it says so (and parses), else the text. */
export async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('json')) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A bounded fetch: a server that does not answer within `ms` fails the test instead of hanging it. */
export function fetchWithin(url: string, init: RequestInit, ms = 10_000): Promise<Response> {
  return fetch(url, { ...init, signal: AbortSignal.timeout(ms) });
}
