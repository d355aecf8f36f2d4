import type { Readable } from 'node:stream';

/** A header block's default limit: what a bounce returns and what the relay hop inspects. */
export const HEADER_LIMIT = 64 * 1024;

/**
 * A message's header block (through the line before the first empty line), read from its
 * payload stream as bytes so that 8-bit header text reaches a bounce unchanged; at most `limit` bytes.
 */
export async function readHeaderBlock(stream: Readable, limit = HEADER_LIMIT): Promise<Buffer> {
  let head = Buffer.alloc(0);
  try {
    for await (const chunk of stream) {
      head = Buffer.concat([head, Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk))]);
      const end = headerEnd(head);
      if (end !== undefined) return head.subarray(0, Math.min(end, limit));
      if (head.length >= limit) break;
    }
    return head.subarray(0, limit);
  } finally {
    stream.destroy();
  }
}

/** readHeaderBlock of a message held in memory. */
export function headerBlockOf(message: Buffer, limit = HEADER_LIMIT): Buffer {
  return message.subarray(0, Math.min(headerEnd(message) ?? message.length, limit));
}

/** Where the header block ends (after its last line's line end), if the empty line is there. */
export function headerEnd(bytes: Buffer): number | undefined {
  const crlf = bytes.indexOf('\r\n\r\n');
  // A bare-LF end can only come first if it lies before the CRLF one: the rest (a CRLF message's whole
  // body) need not be searched.
  const lf = (crlf >= 0 ? bytes.subarray(0, crlf + 2) : bytes).indexOf('\n\n');
  const end = Math.min(crlf >= 0 ? crlf + 2 : Infinity, lf >= 0 ? lf + 1 : Infinity);
  return end === Infinity ? undefined : end;
}
