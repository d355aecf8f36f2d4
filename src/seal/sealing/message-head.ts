import { simpleParser, type ParsedMail } from 'mailparser';
import { badRequest } from '../../kernel/errors.ts';

/** Header sections beyond this are not mail (long Received chains and DKIM stay far below). */
export const MAX_HEADER_BYTES = 1024 * 1024;

export interface MessageHead {
  /** Every byte read so far: the header section and possibly the start of the body. */
  buffered: Buffer;
  /** Length of the header section in `buffered`, its terminating empty line included. */
  headerLength: number;
  /** The source ended while reading the head. */
  ended: boolean;
}

/**
 * Reads the message up to the empty line that ends its header section (RFC 5322 section 2.1), so
 * that recipients can be checked before anything is encrypted or sent to IPFS, while the body stays
 * a stream. A message without a body ends the header section at the end of the input.
 */
export async function readHead(source: AsyncIterator<Buffer>, onBytes: (count: number) => void): Promise<MessageHead> {
  const chunks: Buffer[] = [];
  let length = 0;
  for (;;) {
    const next = await source.next();
    if (next.done) {
      const buffered = Buffer.concat(chunks);
      return { buffered, headerLength: buffered.length, ended: true };
    }
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    onBytes(chunk.length);
    chunks.push(chunk);
    const searchFrom = Math.max(0, length - 3);
    length += chunk.length;
    const joined = chunks.length === 1 ? chunk : Buffer.concat(chunks);
    if (chunks.length > 1) chunks.splice(0, chunks.length, joined);
    const end = headerEnd(joined, searchFrom);
    if (end !== undefined) return { buffered: joined, headerLength: end, ended: false };
    if (length > MAX_HEADER_BYTES)
      throw badRequest(`The message has no end of its header section within ${MAX_HEADER_BYTES} bytes`);
  }
}

/** Index just past the first empty line (CRLF CRLF or bare LF LF), or 0 when the message starts with one. */
function headerEnd(data: Buffer, from: number): number | undefined {
  if (from === 0) {
    if (data[0] === 0x0a) return 1;
    if (data[0] === 0x0d && data[1] === 0x0a) return 2;
  }
  for (let i = Math.max(from, 0); i < data.length - 1; i++) {
    if (data[i] !== 0x0a) continue;
    if (data[i + 1] === 0x0a) return i + 2;
    if (data[i + 1] === 0x0d && data[i + 2] === 0x0a) return i + 3;
  }
  return undefined;
}

/** The header section through mailparser: From, To, Cc, Subject (MIME words decoded), every header. */
export async function parseHead(head: MessageHead): Promise<ParsedMail> {
  try {
    return await simpleParser(head.buffered.subarray(0, head.headerLength), {
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipImageLinks: true,
      skipTextLinks: true,
    });
  } catch (error) {
    throw badRequest(`The message cannot be parsed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
