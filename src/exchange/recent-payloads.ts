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
