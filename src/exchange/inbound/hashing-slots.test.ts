import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { HashingSlots } from './hashing-slots.ts';

describe('hashing slots', () => {
  it('runs at most its number of checks at once, the others in the order they came, each to its end', async () => {
    const slots = new HashingSlots(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        slots
          .run(async () => {
            started.push(i);
            most = Math.max(most, ++running);
            await sleep(10);
            running--;
            if (i === 3) throw new Error('a failed check frees its slot too');
            return i;
          })
          .catch((error: Error) => error.message),
      ),
    );
    assert.equal(most, 2);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(results, [0, 1, 2, 'a failed check frees its slot too', 4, 5, 6]);
  });
});
