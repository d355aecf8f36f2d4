import { Readable } from 'node:stream';
import { headerEnd } from './header-block.ts';

/** A Bcc field with its folded lines (the payload's line ends are CRLF since intake). */
const BCC_FIELD = /^bcc:[^\r\n]*(?:\r\n[ \t][^\r\n]*)*(?:\r\n|$)/gim;
const HAS_BCC = /^bcc:/im;

/**
 * `Bcc:` is removed from every copy that leaves (relayed, sealed), as Postfix's cleanup removes it: its
 * recipients are in the envelope (RCPT TO), and the header would show each of them to every other
 * recipient. These helpers rewrite the header block only; the body is never read whole for it.
 */

/** Whether an unfolded or raw header block (latin1 text) has a Bcc field. */
export const hasBcc = (headText: string): boolean => HAS_BCC.test(headText);

/** A header block without its Bcc fields; the same Buffer when it has none. */
export function headWithoutBcc(head: Buffer): Buffer {
  const text = head.toString('latin1');
  return hasBcc(text) ? Buffer.from(text.replace(BCC_FIELD, ''), 'latin1') : head;
}

/** A whole message without the Bcc fields of its header block; the same Buffer when it has none. */
export function messageWithoutBcc(message: Buffer): Buffer {
  const end = headerEnd(message) ?? message.length;
  const head = message.subarray(0, end);
  const stripped = headWithoutBcc(head);
  return stripped === head ? message : Buffer.concat([stripped, message.subarray(end)]);
}

/**
 * A message stream without the Bcc fields of its header block: the block is held until its end has come
 * (the first chunk, as a rule), rewritten, and the rest passed on chunk by chunk.
 */
export function streamWithoutBcc(source: Readable): Readable {
  return Readable.from(withoutBccChunks(source));
}

async function* withoutBccChunks(source: Readable): AsyncGenerator<Buffer> {
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
      yield headWithoutBcc(head.subarray(0, end));
      yield head.subarray(end);
      head = undefined;
    }
    // A message that is all header.
    if (head?.length) yield headWithoutBcc(head);
  } finally {
    source.destroy();
  }
}
