import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { readUpTo, RecentPayloads, RECENT_PAYLOAD_MAX } from './recent-payloads.ts';

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

describe('RecentPayloads', () => {
  it('keeps small payloads within its total, the least recently used going first, and never large ones', () => {
    const recent = new RecentPayloads(3000);
    recent.remember('a', Buffer.alloc(1000));
    recent.remember('b', Buffer.alloc(1000));
    recent.remember('c', Buffer.alloc(1000));
    assert.ok(recent.get('a'));
    recent.remember('d', Buffer.alloc(1000));
    assert.equal(recent.get('b'), undefined, 'the least recently used went');
    assert.ok(recent.get('a') && recent.get('c') && recent.get('d'));
    recent.forget('a');
    assert.equal(recent.get('a'), undefined);
    const large = new RecentPayloads(10 * RECENT_PAYLOAD_MAX);
    large.remember('big', Buffer.alloc(RECENT_PAYLOAD_MAX + 1));
    assert.equal(large.get('big'), undefined);
  });
});
