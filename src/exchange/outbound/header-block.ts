import type { Readable } from 'node:stream';

/**
 * A message's header block (through the line before the first empty line), read from its
 * payload stream as bytes so that 8-bit header text reaches a bounce unchanged; at most `limit` bytes.
 */
export async function readHeaderBlock(stream: Readable, limit = 64 * 1024): Promise<Buffer> {
  let head = Buffer.alloc(0);
  try {
    for await (const chunk of stream) {
      head = Buffer.concat([head, Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk))]);
      const ends = [head.indexOf('\r\n\r\n'), head.indexOf('\n\n')];
      const end = Math.min(...[ends[0]! >= 0 ? ends[0]! + 2 : Infinity, ends[1]! >= 0 ? ends[1]! + 1 : Infinity]);
      if (end !== Infinity) return head.subarray(0, Math.min(end, limit));
      if (head.length >= limit) break;
    }
    return head.subarray(0, limit);
  } finally {
    stream.destroy();
  }
}
