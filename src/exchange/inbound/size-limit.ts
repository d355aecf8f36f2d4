import { Transform, type TransformCallback } from 'node:stream';
import { AppError } from '../../kernel/errors.ts';

/** The error of a message above SMTP_MAX_MESSAGE_SIZE: 552 over SMTP, 413 over HTTP. */
export function messageTooLarge(limit: number): AppError {
  return new AppError(
    'payload_too_large',
    413,
    `The message is larger than the limit of ${limit} bytes (SMTP_MAX_MESSAGE_SIZE)`,
  );
}

/**
 * Passes a message through to the object store, counting its bytes, and fails the stream the moment
 * the count passes `limit`, so an oversize upload stops there instead of being stored and found out
 * afterwards (smtp-server only flags `sizeExceeded` once the whole message went by).
 *
 * `prefix` (the SMTP server's Received: trace header) goes out in front of the first byte; it does not
 * count against the limit, which is the sender's message as the sender sent it.
 */
export class MessageSizeLimit extends Transform {
  /** Bytes of the message seen so far, prefix excluded. */
  bytes = 0;
  private prefix: Buffer | undefined;

  constructor(
    private readonly limit: number,
    options: { prefix?: Buffer } = {},
  ) {
    super();
    this.prefix = options.prefix;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      callback(messageTooLarge(this.limit));
      return;
    }
    this.pushPrefix();
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.pushPrefix();
    callback();
  }

  private pushPrefix(): void {
    if (this.prefix) this.push(this.prefix);
    this.prefix = undefined;
  }
}
