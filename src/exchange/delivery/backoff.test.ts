import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelayMs } from './backoff.ts';

describe('retry backoff', () => {
  const options = { baseMs: 60_000, maxMs: 3_600_000 };
  const LONGEST = () => 0.999999;

  it('waits DELIVERY_RETRY_BASE before the first retry and doubles from there', () => {
    const nominal = [1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(attempt, options, () => 0));
    assert.deepEqual(nominal, [60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000]);
  });

  it('never waits longer than DELIVERY_RETRY_MAX', () => {
    for (const attempt of [6, 7, 8, 10, 50, 1000]) {
      assert.ok(retryDelayMs(attempt, options, LONGEST) <= 3_600_000, `attempt ${attempt}`);
      assert.ok(retryDelayMs(attempt, options, Math.random) <= 3_600_000);
    }
    for (const attempt of [7, 8, 10, 50, 1000])
      assert.equal(
        retryDelayMs(attempt, options, () => 0),
        3_600_000,
      );
    // A nominal step just under the cap is lengthened up to the cap, not past it.
    assert.equal(retryDelayMs(1, { baseMs: 3_500_000, maxMs: 3_600_000 }, LONGEST), 3_600_000);
  });

  it('lengthens each delay by up to 20 % at random, never shortens it, and the sequence still grows', () => {
    assert.equal(retryDelayMs(1, options, LONGEST), 72_000);
    for (let attempt = 1; attempt <= 6; attempt++) {
      const nominal = retryDelayMs(attempt, options, () => 0);
      for (let i = 0; i < 20; i++) {
        const delay = retryDelayMs(attempt, options);
        assert.ok(
          delay >= nominal && delay <= nominal * 1.2,
          `attempt ${attempt}: ${delay} within [${nominal}, ${nominal * 1.2}]`,
        );
      }
    }
    for (let attempt = 1; attempt < 6; attempt++) {
      const longestNow = retryDelayMs(attempt, options, LONGEST);
      const shortestNext = retryDelayMs(attempt + 1, options, () => 0);
      assert.ok(shortestNext > longestNow, `attempt ${attempt + 1} waits longer than attempt ${attempt}`);
    }
    const spread = new Set(Array.from({ length: 50 }, () => retryDelayMs(3, options)));
    assert.ok(spread.size > 1, 'jitter spreads messages that failed together');
  });
});
