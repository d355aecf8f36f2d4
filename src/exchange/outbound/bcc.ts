import type { Readable } from 'node:stream';
import { messageWithHead, streamWithHead } from './head-rewrite.ts';

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
export const messageWithoutBcc = (message: Buffer): Buffer => messageWithHead(message, headWithoutBcc);

/** A message stream without the Bcc fields of its header block (head-rewrite.ts streamWithHead). */
export const streamWithoutBcc = (source: Readable): Readable => streamWithHead(source, headWithoutBcc);
