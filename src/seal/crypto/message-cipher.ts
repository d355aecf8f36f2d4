import { createCipheriv, createDecipheriv, randomBytes, type CipherGCM, type DecipherGCM } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * The sealed content, as added to IPFS (format version 1):
 *
 *   0x01 | nonce (12 bytes) | AES-256-GCM ciphertext of the raw message | GCM tag (16 bytes)
 *
 * One fresh 256-bit key per message, so the nonce is random only for good measure. The version byte and
 * nonce are the additional authenticated data. Both directions stream: the tag goes last so encryption
 * never holds the message, and decryption holds back only the final 16 bytes until the end, where the
 * tag is checked. Decrypted bytes are therefore unverified until the stream ends without error: callers
 * must not show them before that (the content route verifies before it serves).
 */
export const CONTENT_FORMAT_VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + NONCE_BYTES;

export function newMessageKey(): Buffer {
  return randomBytes(32);
}

/**
 * Encrypts a stream of plaintext chunks into the format above, chunk by chunk: the header first, the
 * tag last. A generator rather than a Transform so that the consumer's pace (the upload to the
 * cluster) drives the reading of the request, and an error from the source ends it at once.
 */
export async function* encryptChunks(key: Buffer, plaintext: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const nonce = randomBytes(NONCE_BYTES);
  const header = Buffer.concat([Buffer.from([CONTENT_FORMAT_VERSION]), nonce]);
  const cipher: CipherGCM = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(header);
  yield header;
  for await (const chunk of plaintext) {
    const out = cipher.update(chunk);
    if (out.length > 0) yield out;
  }
  yield Buffer.concat([cipher.final(), cipher.getAuthTag()]);
}

/** The content did not decrypt: wrong key, another message's content, or altered bytes. */
export class IntegrityError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IntegrityError';
  }
}

/** Bytes the format adds to the plaintext: version, nonce, tag. */
export const CONTENT_OVERHEAD_BYTES = HEADER_BYTES + TAG_BYTES;

/**
 * Decrypts sealed content held whole in memory in one call, the tag checked before anything is
 * returned: for small content, where DecryptStream's stream machinery would cost more than the
 * decryption itself.
 */
export function decryptContent(key: Buffer, sealed: Buffer): Buffer {
  if (sealed.length < CONTENT_OVERHEAD_BYTES) throw new IntegrityError('sealed content is truncated');
  const decipher = openDecipher(key, sealed.subarray(0, HEADER_BYTES));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  const body = decipher.update(sealed.subarray(HEADER_BYTES, sealed.length - TAG_BYTES));
  const last = finalBlock(decipher);
  return last.length > 0 ? Buffer.concat([body, last]) : body;
}

/** The decipher for content with this header (version and nonce, also its authenticated data). */
function openDecipher(key: Buffer, header: Buffer): DecipherGCM {
  if (header[0] !== CONTENT_FORMAT_VERSION) {
    throw new IntegrityError(`sealed content has unknown format version ${header[0]}`);
  }
  const decipher = createDecipheriv('aes-256-gcm', key, header.subarray(1));
  decipher.setAAD(header);
  return decipher;
}

/** The last bytes, once the tag set before holds: an IntegrityError when it does not. */
function finalBlock(decipher: DecipherGCM): Buffer {
  try {
    return decipher.final();
  } catch (error) {
    throw new IntegrityError('sealed content failed authentication (altered, or not this message)', { cause: error });
  }
}

export class DecryptStream extends Transform {
  private decipher: DecipherGCM | undefined;
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly key: Buffer) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
    let data: Buffer = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    if (!this.decipher) {
      if (data.length < HEADER_BYTES) {
        this.pending = data;
        return done();
      }
      try {
        this.decipher = openDecipher(this.key, data.subarray(0, HEADER_BYTES));
      } catch (error) {
        return done(error as Error);
      }
      data = data.subarray(HEADER_BYTES);
    }
    if (data.length <= TAG_BYTES) {
      this.pending = Buffer.from(data);
      return done();
    }
    this.pending = Buffer.from(data.subarray(data.length - TAG_BYTES));
    done(null, this.decipher.update(data.subarray(0, data.length - TAG_BYTES)));
  }

  override _flush(done: TransformCallback) {
    if (!this.decipher || this.pending.length !== TAG_BYTES) {
      return done(new IntegrityError('sealed content is truncated'));
    }
    this.decipher.setAuthTag(this.pending);
    try {
      done(null, finalBlock(this.decipher));
    } catch (error) {
      done(error as Error);
    }
  }
}
