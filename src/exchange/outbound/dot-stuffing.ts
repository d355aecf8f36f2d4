import type { TransformCallback } from 'node:stream';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream';

const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;
const INSERT_LF = Buffer.from('\n');
const INSERT_LF_DOT = Buffer.from('\n.');
const INSERT_CR = Buffer.from('\r');
const INSERT_DOT = Buffer.from('.');

/** What nodemailer's DataStream keeps between chunks (10.x, smtp-connection/data-stream.js). */
interface DataStreamState {
  inByteCount: number;
  outByteCount: number;
  /** The previous chunk's last byte; false before the first one. */
  lastByte: number | false;
  push(chunk: Buffer): boolean;
  /** Ours: the output of the last chunk, not pushed yet (see dotStuffingFlush). */
  heldBack?: Buffer;
}

type Transform = (
  this: DataStreamState,
  chunk: Buffer | string,
  encoding: BufferEncoding,
  done: TransformCallback,
) => void;
type Flush = (this: DataStreamState, done: TransformCallback) => void;

const prototype = DataStream.prototype as unknown as { _transform: Transform; _flush: Flush };
/** nodemailer's own DATA stream functions, kept for the tests that hold ours to them. */
export const libraryTransform = prototype._transform;
export const libraryFlush = prototype._flush;

/**
 * The DATA stream's rewrite (RFC 5321 §4.5.2 dot-stuffing; a bare CR or LF made CRLF, a dot after a
 * bare CR stuffed too against SMTP smuggling), byte for byte what nodemailer's DataStream writes, found
 * with Buffer.indexOf instead of a JavaScript loop over every byte: nodemailer's loop cost ~0.1 ms of CPU
 * per 10 KB message, a tenth of the delivery engine's budget, and a stored message has only a line end
 * every few dozen bytes to look at.
 */
export function dotStuffingTransform(
  this: DataStreamState,
  input: Buffer | string,
  _encoding: BufferEncoding,
  done: TransformCallback,
): void {
  if (!input?.length) {
    done();
    return;
  }
  const chunk = typeof input === 'string' ? Buffer.from(input) : input;
  this.inByteCount += chunk.length;
  const parts: Buffer[] = [];
  let from = 0;
  const insert = (at: number, bytes: Buffer) => {
    if (at > from) parts.push(chunk.subarray(from, at));
    parts.push(bytes);
    from = at;
  };
  // The first byte follows the previous chunk's last.
  const prev = this.lastByte;
  if (prev === CR && chunk[0] !== LF) insert(0, chunk[0] === DOT ? INSERT_LF_DOT : INSERT_LF);
  else if ((prev === LF || prev === false) && chunk[0] === DOT) insert(0, INSERT_DOT);
  // Every other insertion is at a CR, at an LF or just after one, in increasing order.
  let cr = chunk.indexOf(CR);
  let lf = chunk.indexOf(LF);
  while (cr >= 0 || lf >= 0) {
    if (cr >= 0 && (lf < 0 || cr < lf)) {
      const next = cr + 1;
      if (next < chunk.length && chunk[next] !== LF) insert(next, chunk[next] === DOT ? INSERT_LF_DOT : INSERT_LF);
      cr = chunk.indexOf(CR, next);
    } else {
      if ((lf > 0 ? chunk[lf - 1] : prev) !== CR) insert(lf, INSERT_CR);
      if (chunk[lf + 1] === DOT) insert(lf + 1, INSERT_DOT);
      lf = chunk.indexOf(LF, lf + 1);
    }
  }
  let out = chunk;
  if (parts.length > 0) {
    if (from < chunk.length) parts.push(chunk.subarray(from));
    out = Buffer.concat(parts);
  }
  this.outByteCount += out.length;
  if (this.heldBack) this.push(this.heldBack);
  this.heldBack = out;
  this.lastByte = chunk[chunk.length - 1]!;
  done();
}

/**
 * The end of the DATA stream, `.` on a line of its own after a line end (what nodemailer's DataStream
 * writes), pushed together with the last chunk that dotStuffingTransform held back: a message held in
 * memory goes to the relay's socket in one write instead of two.
 */
export function dotStuffingFlush(this: DataStreamState, done: TransformCallback): void {
  const end = Buffer.from(this.lastByte === LF ? '.\r\n' : this.lastByte === CR ? '\n.\r\n' : '\r\n.\r\n');
  this.outByteCount += end.length;
  this.push(this.heldBack ? Buffer.concat([this.heldBack, end]) : end);
  this.heldBack = undefined;
  done();
}

/**
 * Installs dotStuffingTransform and dotStuffingFlush in nodemailer's DataStream, which every SMTP
 * connection of the process writes its messages through (the relay's and the auth service's alike: the
 * bytes are the same). Left alone when a nodemailer upgrade changed what a DataStream keeps, so that the
 * library's own run.
 */
export function installDotStuffing(): void {
  const probe = new DataStream() as unknown as Partial<DataStreamState>;
  const known = probe.inByteCount === 0 && probe.outByteCount === 0 && probe.lastByte === false;
  if (known && typeof libraryTransform === 'function' && typeof libraryFlush === 'function') {
    prototype._transform = dotStuffingTransform;
    prototype._flush = dotStuffingFlush;
  }
}
