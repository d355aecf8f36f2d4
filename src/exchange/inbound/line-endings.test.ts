import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CrlfLineEnds, crlfLineEnds } from './line-endings.ts';

/** The rule, written the slow and obvious way. */
const reference = (text: string) => text.replace(/\r\n|\r|\n/g, '\r\n');

describe('CRLF line ends for every stored message', () => {
  it('turns bare LF and bare CR into CRLF and leaves CRLF alone', () => {
    assert.equal(crlfLineEnds(Buffer.from('a\nb\rc\r\nd\n\re\r\r\n')).toString(), 'a\r\nb\r\nc\r\nd\r\n\r\ne\r\n\r\n');
    assert.equal(crlfLineEnds(Buffer.from('no line end')).toString(), 'no line end');
    assert.equal(crlfLineEnds(Buffer.from('ends with CR\r')).toString(), 'ends with CR\r\n');
  });

  it('gives the same bytes however the message is cut into chunks (fuzzed)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', '.', '\r', '\n', '\r\n', 'é'), { maxLength: 60 }).map((parts) => parts.join('')),
        fc.array(fc.nat(80), { maxLength: 6 }),
        (text, cuts) => {
          const bytes = Buffer.from(text);
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const ends = new CrlfLineEnds();
          const out: Buffer[] = [];
          let from = 0;
          for (const point of [...points, bytes.length]) {
            out.push(ends.push(bytes.subarray(from, point)));
            from = point;
          }
          out.push(ends.end());
          assert.equal(Buffer.concat(out).toString(), reference(text));
        },
      ),
      { numRuns: 500 },
    );
  });
});
