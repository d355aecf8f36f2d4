import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelayMs } from './backoff.ts';

describe('retry backoff', () => {
  const options = { baseMs: 60_000, maxMs: 3_600_000 };

  it('waits about DELIVERY_RETRY_BASE before the first retry and doubles from there', () => {
    const nominal = [1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(attempt, options, () => 0));
    assert.deepEqual(nominal, [60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000]);
  });

  it('never waits longer than DELIVERY_RETRY_MAX', () => {
    for (const attempt of [7, 8, 10, 50, 1000]) {
      assert.equal(retryDelayMs(attempt, options, () => 0), 3_600_000);
      assert.ok(retryDelayMs(attempt, options, Math.random) <= 3_600_000);
    }
  });

  it('shortens each delay by up to 20 % at random, so the sequence still grows', () => {
    assert.equal(retryDelayMs(1, options, () => 0.999999), 48_000);
    for (let attempt = 1; attempt < 6; attempt++) {
      const longestNow = retryDelayMs(attempt, options, () => 0);
      const shortestNext = retryDelayMs(attempt + 1, options, () => 0.999999);
      assert.ok(shortestNext > longestNow, `attempt ${attempt + 1} waits longer than attempt ${attempt}`);
    }
    const spread = new Set(Array.from({ length: 50 }, () => retryDelayMs(3, options)));
    assert.ok(spread.size > 1, 'jitter spreads messages that failed together');
  });
});
