import { Transform, type TransformCallback } from 'node:stream';
import type { BodyTraits } from './body-traits.ts';

const CRLF = Buffer.from('\r\n');
const CR = 0x0d;
const LF = 0x0a;

/**
 * One rule for line ends (docs/decisions.md#line-ends): every message is stored with CRLF line ends, a bare
 * LF or a bare CR becoming CRLF, as RFC 5322 §2.1 requires of a message and as Postfix's cleanup writes its
 * queue files. The stored bytes are then what every outbound strategy sends: the seal strategy seals them
 * unchanged and the relay's DATA stream has nothing left to rewrite, so what is sealed and what is relayed
 * are the same bytes.
 *
 * Hand-written: a byte-level rewrite with a carry across chunk boundaries (a CR at the end of one chunk
 * may be the first half of a CRLF); the MIME libraries at hand rewrite line ends only as part of
 * encoding a whole message.
 */
export class CrlfLineEnds {
  private pendingCr = false;

  /** The chunk with its line ends made CRLF; a CR at its end waits for the next chunk (or end()). */
  push(chunk: Buffer): Buffer {
    const parts: Buffer[] = [];
    let start = 0;
    if (this.pendingCr) {
      this.pendingCr = false;
      parts.push(CRLF);
      if (chunk[0] === LF) start = 1;
    }
    let pos = start;
    for (;;) {
      const cr = chunk.indexOf(CR, pos);
      const lf = chunk.indexOf(LF, pos);
      if (cr < 0 && lf < 0) break;
      if (cr >= 0 && (lf < 0 || cr < lf)) {
        if (cr === chunk.length - 1) {
          parts.push(chunk.subarray(start, cr));
          start = chunk.length;
          this.pendingCr = true;
          break;
        }
        if (chunk[cr + 1] === LF) {
          pos = cr + 2;
          continue;
        }
        parts.push(chunk.subarray(start, cr), CRLF);
        start = pos = cr + 1;
        continue;
      }
      parts.push(chunk.subarray(start, lf), CRLF);
      start = pos = lf + 1;
    }
    if (parts.length === 0) return chunk;
    parts.push(chunk.subarray(start));
    return Buffer.concat(parts);
  }

  /** What is still held back: a last bare CR. */
  end(): Buffer {
    if (!this.pendingCr) return Buffer.alloc(0);
    this.pendingCr = false;
    return CRLF;
  }
}

/** A whole message with CRLF line ends. */
export function crlfLineEnds(message: Buffer): Buffer {
  const ends = new CrlfLineEnds();
  const body = ends.push(message);
  const rest = ends.end();
  return rest.length ? Buffer.concat([body, rest]) : body;
}

/** A stream of the message with CRLF line ends; `traits` sees each converted chunk (no stream more per message). */
export class CrlfLineEndsStream extends Transform {
  private readonly ends = new CrlfLineEnds();

  constructor(private readonly traits?: BodyTraits) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const converted = this.ends.push(chunk);
    this.traits?.scan(converted);
    done(null, converted);
  }

  override _flush(done: TransformCallback): void {
    const rest = this.ends.end();
    if (rest.length) this.traits?.scan(rest);
    this.traits?.end();
    done(null, rest.length ? rest : undefined);
  }
}
