import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Batcher, isDataError } from './batcher.ts';

const dataError = (message: string) => Object.assign(new Error(message), { code: '22021' });

/** A batcher that answers each item with itself and records the batches it was given. */
function recordingBatcher(options: ConstructorParameters<typeof Batcher<number, number>>[1]) {
  const batches: number[][] = [];
  const batcher = new Batcher<number, number>(async (items) => {
    batches.push(items);
    return items;
  }, options);
  return { batches, batcher };
}

describe('Batcher', () => {
  it('writes items submitted together in one batch and answers each with its own result', async () => {
    const batches: number[][] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        return items.map((n) => n * 10);
      },
      { maxBatch: 100, maxConcurrent: 1 },
    );
    const results = await Promise.all([1, 2, 3, 4].map((n) => batcher.submit(n)));
    assert.deepEqual(results, [10, 20, 30, 40]);
    assert.deepEqual(batches, [[1, 2, 3, 4]]);
  });

  it('gathers items that arrive while a batch is in flight into the next one, up to maxBatch', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const firstHeld = new Promise<void>((resolve) => (release = resolve));
    const batcher = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        if (batches.length === 1) await firstHeld;
        return items;
      },
      { maxBatch: 3, maxConcurrent: 1 },
    );
    const first = batcher.submit(0);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    release();
    assert.deepEqual(await Promise.all([first, ...later]), [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(batches, [[0], [1, 2, 3], [4, 5]]);
  });

  it('retries each item alone after a data error, so one bad item fails alone', async () => {
    const batcher = new Batcher<string, string>(
      async (items) => {
        if (items.includes('bad')) throw dataError('invalid byte sequence');
        return items.map((s) => s.toUpperCase());
      },
      { maxBatch: 100, maxConcurrent: 1, retryAlone: isDataError },
    );
    const results = await Promise.allSettled(['a', 'bad', 'c'].map((s) => batcher.submit(s)));
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['A', 'invalid byte sequence', 'C'],
    );
  });

  it('fails the whole batch at once for an error that is not about the data', async () => {
    let calls = 0;
    const batcher = new Batcher<string, string>(
      async () => {
        calls++;
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      { maxBatch: 100, maxConcurrent: 1, retryAlone: isDataError },
    );
    const results = await Promise.allSettled(['a', 'b', 'c'].map((s) => batcher.submit(s)));
    assert.ok(results.every((r) => r.status === 'rejected' && /ECONNREFUSED/.test((r.reason as Error).message)));
    assert.equal(calls, 1);
  });

  it('holds items while told to, then writes them in one batch once the hold ends', async () => {
    let busy = true;
    const { batches, batcher } = recordingBatcher({
      maxBatch: 100,
      maxConcurrent: 2,
      hold: { while: () => busy, maxMs: 60_000 },
    });
    const results: Array<Promise<number>> = [];
    for (let n = 0; n < 5; n++) {
      results.push(batcher.submit(n));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(batches.length, 0, 'nothing written while held');
    busy = false;
    assert.deepEqual(await Promise.all(results), [0, 1, 2, 3, 4]);
    assert.deepEqual(batches, [[0, 1, 2, 3, 4]]);
  });

  it('lets held items go when a full batch is waiting, or when the oldest has waited maxMs', async () => {
    const { batches, batcher } = recordingBatcher({
      maxBatch: 3,
      maxConcurrent: 1,
      hold: { while: () => true, maxMs: 150 },
    });
    const started = performance.now();
    const full = await Promise.all([1, 2, 3].map((n) => batcher.submit(n)));
    assert.deepEqual(full, [1, 2, 3]);
    assert.ok(performance.now() - started < 150, 'a full batch is not held');
    const single = performance.now();
    assert.equal(await batcher.submit(4), 4);
    assert.ok(performance.now() - single >= 140, 'a lone item goes once it has waited maxMs');
    assert.deepEqual(batches, [[1, 2, 3], [4]]);
  });

  it('lets held items go at once on flush()', async () => {
    const { batches, batcher } = recordingBatcher({
      maxBatch: 100,
      maxConcurrent: 1,
      hold: { while: () => true, maxMs: 60_000 },
    });
    const results = [1, 2].map((n) => batcher.submit(n));
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(batches.length, 0, 'held');
    batcher.flush();
    assert.deepEqual(await Promise.all(results), [1, 2]);
    assert.deepEqual(batches, [[1, 2]]);
    const later = batcher.submit(3);
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(batches.length, 1, 'items submitted after the flush are held again');
    batcher.flush();
    assert.equal(await later, 3);
  });

  it('tells data errors (SQLSTATE classes 22 and 23) from others', () => {
    assert.equal(isDataError(dataError('x')), true);
    assert.equal(isDataError(Object.assign(new Error('dup'), { code: '23505' })), true);
    assert.equal(isDataError(Object.assign(new Error('gone'), { code: '57P01' })), false);
    assert.equal(isDataError(new Error('plain')), false);
  });
});
