import { Readable } from 'node:stream';
import { LRUCache } from 'lru-cache';

/** Payloads up to this size are read into memory at intake (and stored with one PutObject). */
export const RECENT_PAYLOAD_MAX = 256 * 1024;

/**
 * The bytes of messages this instance has just accepted, by envelope id, so that delivering them (which
 * this instance usually claims at once) does not read back from the object store what it wrote a
 * moment ago. Small payloads only (RECENT_PAYLOAD_MAX), the least recently used dropped first past
 * `totalBytes` (DELIVERY_PAYLOAD_CACHE); a payload not held is read from the store as before. The held bytes are
 * exactly the stored ones, and the stored object stays the source of truth until the envelope is finished.
 */
export class RecentPayloads {
  private readonly cache: LRUCache<string, Buffer>;

  constructor(totalBytes: number) {
    this.cache = new LRUCache<string, Buffer>({
      maxSize: totalBytes,
      sizeCalculation: (bytes) => Math.max(1, bytes.length),
    });
  }

  remember(envelopeId: string, bytes: Buffer): void {
    if (bytes.length <= RECENT_PAYLOAD_MAX) this.cache.set(envelopeId, bytes);
  }

  get(envelopeId: string): Buffer | undefined {
    return this.cache.get(envelopeId);
  }

  forget(envelopeId: string): void {
    this.cache.delete(envelopeId);
  }
}

/**
 * Reads `stream` whole when it ends within `limit` bytes; past that, a stream that replays what was read
 * and then the rest (errors of the source included), so a large message is still streamed, never held.
 */
export function readUpTo(stream: Readable, limit: number): Promise<Buffer | Readable> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= limit) return;
      cleanup();
      stream.pause();
      resolve(replay(chunks, stream));
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
  });
}

function replay(head: Buffer[], rest: Readable): Readable {
  // An async generator keeps the backpressure on `rest` and passes its error on.
  return Readable.from(
    (async function* () {
      yield* head;
      for await (const chunk of rest) yield chunk as Buffer;
    })(),
  );
}
