import { isAscii } from 'node:buffer';

const LF = 0x0a;
/** RFC 5322 §2.1.1: a line is at most 998 octets, without its CRLF. */
export const MAX_LINE_OCTETS = 998;

/**
 * What the intake learns of a message while it streams in, after its line ends are CRLF (line-endings.ts),
 * for the relay: whether it holds 8-bit bytes (declared with BODY=8BITMIME whatever the client said) and
 * whether a line is longer than RFC 5322 allows (re-encoded before it is relayed, seven-bit.ts). Both are
 * native scans: isAscii per chunk, and for the lines one lastIndexOf per 999 octets, not one per line.
 */
export class BodyTraits {
  eightBit = false;
  longLines = false;
  /** Octets of the current line (its CR included) that came in earlier chunks. */
  private carried = 0;

  scan(chunk: Buffer): void {
    if (!this.eightBit && !isAscii(chunk)) this.eightBit = true;
    if (this.longLines) return;
    // The current line starts at `start` (before this chunk while carried); it is long when no LF lies
    // within its first 999 octets (998 and the CR).
    let start = -this.carried;
    for (;;) {
      const window = start + MAX_LINE_OCTETS + 1;
      const lf = chunk.lastIndexOf(LF, window);
      if (lf >= 0 && lf >= start) {
        start = lf + 1;
        continue;
      }
      if (window < chunk.length) {
        this.longLines = true;
        return;
      }
      this.carried = chunk.length - start;
      return;
    }
  }

  /** After the last chunk: a last line without a line end may be long too. */
  end(): void {
    if (this.carried > MAX_LINE_OCTETS) this.longLines = true;
  }
}

/** Whether a message held whole has a line over 998 octets (its line ends CRLF). */
export function hasLongLine(message: Buffer): boolean {
  const traits = new BodyTraits();
  traits.scan(message);
  traits.end();
  return traits.longLines;
}
