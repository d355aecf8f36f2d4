import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { readHead } from '../sealing/message-head.ts';
import { DecryptStream, decryptContent, encryptChunks, IntegrityError, newMessageKey } from './message-cipher.ts';
import { singleKeyring } from './environment-key.ts';
import { messageKeyLabel, SecretError } from './secret-box.ts';

async function* chunked(data: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < data.length; i += size) yield data.subarray(i, i + size);
}

async function collect(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of source) parts.push(part);
  return Buffer.concat(parts);
}

async function decrypt(key: Buffer, ciphertext: Buffer, size: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  await pipeline(
    Readable.from(chunked(ciphertext, size)),
    new DecryptStream(key),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        parts.push(chunk);
        done();
      },
    }),
  );
  return Buffer.concat(parts);
}

describe('sealed content format', () => {
  it('round-trips whatever the chunking on either side, or decrypted whole; the empty message too', async () => {
    for (const plaintext of [Buffer.alloc(0), Buffer.from('x'), randomBytes(100_003)]) {
      for (const [inSize, outSize] of [
        [1, 1],
        [7, 13],
        [65_536, 16],
        [100_000, 100_000],
      ] as const) {
        const key = newMessageKey();
        const ciphertext = await collect(encryptChunks(key, chunked(plaintext, inSize)));
        assert.equal(ciphertext.length, plaintext.length + 29, 'version, nonce, tag');
        assert.equal(ciphertext[0], 1);
        assert.deepEqual(await decrypt(key, ciphertext, outSize), plaintext);
      }
      const key = newMessageKey();
      const ciphertext = await collect(encryptChunks(key, chunked(plaintext, 4096)));
      assert.deepEqual(decryptContent(key, ciphertext), plaintext, 'decrypted whole, in one call');
    }
  });

  it('fails with IntegrityError for a flipped bit, a truncation, another key, an unknown version', async () => {
    const key = newMessageKey();
    const ciphertext = await collect(encryptChunks(key, chunked(Buffer.from('the sealed words'), 4)));
    const flipped = Buffer.from(ciphertext);
    flipped[20]! ^= 1;
    const versioned = Buffer.from(ciphertext);
    versioned[0] = 2;
    for (const [what, data, withKey] of [
      ['flipped', flipped, key],
      ['truncated', ciphertext.subarray(0, ciphertext.length - 1), key],
      ['too short', ciphertext.subarray(0, 20), key],
      ['other key', ciphertext, newMessageKey()],
      ['version', versioned, key],
    ] as const) {
      await assert.rejects(decrypt(withKey, data, 5), IntegrityError, what);
      assert.throws(() => decryptContent(withKey, data), IntegrityError, `${what}, decrypted whole`);
    }
  });

  it('binds a wrapped key to its label, its version and its master key', () => {
    const keyring = singleKeyring(randomBytes(32), 3);
    const key = newMessageKey();
    const wrapped = keyring.wrap(key, messageKeyLabel('a'));
    assert.match(wrapped, /^k3\.[A-Za-z0-9_-]+$/);
    assert.deepEqual(keyring.unwrap(wrapped, messageKeyLabel('a')), key);
    assert.throws(() => keyring.unwrap(wrapped, messageKeyLabel('b')), SecretError);
    assert.throws(() => singleKeyring(randomBytes(32), 3).unwrap(wrapped, messageKeyLabel('a')), SecretError);
  });
});

describe('reading the header section', () => {
  it('finds the empty line however the chunks split it, CRLF or bare LF, and keeps every byte', async () => {
    for (const message of [
      'From: a@b.example\r\nTo: c@d.example\r\n\r\nbody\r\n',
      'From: a@b.example\nTo: c@d.example\n\nbody\n',
    ]) {
      const data = Buffer.from(message);
      for (const size of [1, 2, 3, 5, 64]) {
        const head = await readHead(chunked(data, size)[Symbol.asyncIterator](), () => undefined);
        assert.equal(
          head.buffered.subarray(0, head.headerLength).toString(),
          message.slice(0, message.indexOf('body')),
          `chunks of ${size}`,
        );
        assert.ok(data.subarray(0, head.buffered.length).equals(head.buffered));
      }
    }
    const headerOnly = await readHead(
      chunked(Buffer.from('From: a@b.example\r\n'), 4)[Symbol.asyncIterator](),
      () => undefined,
    );
    assert.deepEqual([headerOnly.headerLength, headerOnly.ended], [19, true]);
  });
});
