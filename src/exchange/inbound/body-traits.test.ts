import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BodyTraits, hasLongLine } from './body-traits.ts';

/** The traits of a message fed in chunks of `size` octets, as a stream gives them. */
function traitsOf(message: Buffer, size: number): BodyTraits {
  const traits = new BodyTraits();
  for (let at = 0; at < message.length; at += size) traits.scan(message.subarray(at, at + size));
  traits.end();
  return traits;
}

const lines = (...lengths: number[]) => Buffer.from(lengths.map((n) => `${'a'.repeat(n)}\r\n`).join(''));

describe('BodyTraits', () => {
  it('finds a line over 998 octets wherever the chunks cut it, and only such a line', () => {
    const cases: Array<[Buffer, boolean]> = [
      [lines(998), false],
      [lines(999), true],
      [lines(10, 998, 10), false],
      [lines(10, 999, 10), true],
      [lines(...Array.from({ length: 300 }, () => 70)), false],
      [Buffer.concat([lines(...Array.from({ length: 300 }, () => 70)), lines(2000)]), true],
      // A last line without its CRLF counts as it is.
      [Buffer.from('a'.repeat(998)), false],
      [Buffer.from('a'.repeat(999)), true],
      [Buffer.from(`x\r\n${'a'.repeat(999)}`), true],
      [Buffer.alloc(0), false],
      [Buffer.from('\r\n\r\n'), false],
    ];
    for (const [message, long] of cases) {
      for (const size of [1, 2, 3, 7, 500, 998, 999, 1000, 1001, 4096, message.length || 1]) {
        assert.equal(traitsOf(message, size).longLines, long, `${message.length} octets in chunks of ${size}`);
      }
      assert.equal(hasLongLine(message), long);
    }
  });

  it('finds 8-bit bytes in any chunk', () => {
    const message = Buffer.concat([lines(100, 100), Buffer.from('Grüße\r\n'), lines(100)]);
    for (const size of [1, 5, 64, 4096]) assert.equal(traitsOf(message, size).eightBit, true);
    assert.equal(traitsOf(lines(100, 100), 7).eightBit, false);
  });
});
