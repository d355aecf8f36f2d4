import { Readable } from 'node:stream';
import { headerEnd } from './header-block.ts';

/**
 * Rewrites of a message's header block on its way out (no Bcc: bcc.ts; no subject tag: subject-tag.ts),
 * never touching the body: a stored message stays as received, and the body is never read whole for it.
 */

/** A whole message with its header block rewritten; the same Buffer when the rewrite changed nothing. */
export function messageWithHead(message: Buffer, rewrite: (head: Buffer) => Buffer): Buffer {
  const end = headerEnd(message) ?? message.length;
  const head = message.subarray(0, end);
  const rewritten = rewrite(head);
  return rewritten === head ? message : Buffer.concat([rewritten, message.subarray(end)]);
}

/**
 * A message stream with its header block rewritten: the block is held until its end has come (the first
 * chunk, as a rule), rewritten, and the rest passed on chunk by chunk.
 */
export function streamWithHead(source: Readable, rewrite: (head: Buffer) => Buffer): Readable {
  return Readable.from(rewrittenChunks(source, rewrite));
}

async function* rewrittenChunks(source: Readable, rewrite: (head: Buffer) => Buffer): AsyncGenerator<Buffer> {
  // The header block read so far; undefined once it has gone out.
  let head: Buffer | undefined = Buffer.alloc(0);
  try {
    for await (const data of source) {
      const chunk = Buffer.isBuffer(data) ? data : Buffer.from(String(data));
      if (!head) {
        yield chunk;
        continue;
      }
      // Only the new bytes (and the three before them, for an empty line cut in two) are searched again.
      const from = Math.max(0, head.length - 3);
      head = Buffer.concat([head, chunk]);
      const found = headerEnd(head.subarray(from));
      if (found === undefined) continue;
      const end = from + found;
      yield rewrite(head.subarray(0, end));
      yield head.subarray(end);
      head = undefined;
    }
    // A message that is all header.
    if (head?.length) yield rewrite(head);
  } finally {
    source.destroy();
  }
}
