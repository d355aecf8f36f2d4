import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { collectUpTo, readUpTo } from './read-up-to.ts';

const chunks = (count: number, size: number) =>
  Array.from({ length: count }, (_, i) => Buffer.alloc(size, 97 + (i % 26)));

describe('readUpTo', () => {
  it('reads a stream that ends within the limit whole', async () => {
    const parts = chunks(3, 1000);
    const read = await readUpTo(Readable.from(parts), 4000);
    assert.ok(Buffer.isBuffer(read));
    assert.deepEqual(read, Buffer.concat(parts));
  });

  it('hands back a longer stream with the bytes read so far in front, in order', async () => {
    const parts = chunks(10, 1000);
    const read = await readUpTo(Readable.from(parts), 2500);
    assert.ok(!Buffer.isBuffer(read));
    assert.deepEqual(await buffer(read), Buffer.concat(parts));
  });

  it('passes on an error of the source, before and after the limit', async () => {
    const failing = (after: number) =>
      Readable.from(
        (async function* () {
          yield* chunks(after, 1000);
          throw new Error('size limit');
        })(),
      );
    await assert.rejects(readUpTo(failing(1), 5000), /size limit/);
    const long = await readUpTo(failing(5), 2000);
    assert.ok(!Buffer.isBuffer(long));
    await assert.rejects(buffer(long), /size limit/);
  });
});

describe('collectUpTo', () => {
  it('collects a stream within the limit, and destroys a longer one instead of holding it', async () => {
    const parts = chunks(3, 1000);
    assert.deepEqual(await collectUpTo(Readable.from(parts), 3000), Buffer.concat(parts));
    const long = Readable.from(chunks(10, 1000));
    assert.equal(await collectUpTo(long, 2500), undefined);
    assert.ok(long.destroyed);
  });
});
