import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Reader } from './auth-reader.ts';

export interface UploadResponse {
  status: number;
  body: any;
  headers: IncomingMessage['headers'];
  /** File bytes written to the socket before the answer came (or all of them). */
  bytesSent: number;
  /** The answer came before the whole file was sent, and the rest was never sent. */
  cutOff: boolean;
}

export interface UploadOptions {
  filename: string;
  /** The part's Content-Type as the client claims it (the service must not trust it). */
  contentType?: string;
  /** The file: bytes, or chunks produced on demand (a large file need never exist in memory). */
  content: Buffer | AsyncIterable<Buffer>;
  /** Known size, for a Content-Length header (browsers send one); chunked without it. */
  size?: number;
  csrf?: string | null;
  /** More request headers (If-Match, for one). */
  headers?: Record<string, string>;
  /** The sealed message the upload is for (`?messageId=`); the session's last one without it. */
  messageId?: string;
}

/**
 * Uploads one file as multipart/form-data the way a browser does, with the reader's cookie and CSRF
 * token, streaming the content with backpressure. Like a browser, it stops sending as soon as an answer
 * arrives (an upload refused half-way), and reports how much it had sent by then.
 */
export function uploadFile(reader: Reader, options: UploadOptions): Promise<UploadResponse> {
  const boundary = `----sealpost${randomBytes(12).toString('hex')}`;
  const filename = options.filename.replace(/"/g, '%22');
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      `Content-Type: ${options.contentType ?? 'application/octet-stream'}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const size = Buffer.isBuffer(options.content) ? options.content.length : options.size;
  const url = new URL('/v1/message/files', reader.baseUrl);
  if (options.messageId !== undefined) url.searchParams.set('messageId', options.messageId);
  const headers: Record<string, string | number> = {
    'content-type': `multipart/form-data; boundary=${boundary}`,
    accept: 'application/json',
  };
  if (size !== undefined) headers['content-length'] = head.length + size + tail.length;
  if (reader.cookie) headers.cookie = reader.cookie;
  const csrf = options.csrf === undefined ? reader.csrf : options.csrf;
  if (csrf) headers['x-csrf-token'] = csrf;
  Object.assign(headers, options.headers);

  return new Promise((resolve, reject) => {
    let bytesSent = 0;
    let answered = false;
    let finishedSending = false;
    const req = httpRequest(url, { method: 'POST', headers, agent: false });
    req.on('response', (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        const token = response.headers['x-csrf-token'];
        if (typeof token === 'string') reader.csrf = token;
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        const cutOff = !finishedSending;
        if (cutOff) req.destroy();
        resolve({ status: response.statusCode ?? 0, body, headers: response.headers, bytesSent, cutOff });
      });
    });
    req.on('error', (error) => {
      // The server closing while we still send is fine once its answer is in.
      if (!answered) reject(error);
    });

    const write = (chunk: Buffer) =>
      new Promise<void>((done) => {
        if (answered || req.destroyed) return done();
        if (req.write(chunk)) return done();
        const go = () => {
          req.off('drain', go);
          req.off('response', go);
          req.off('close', go);
          done();
        };
        req.on('drain', go);
        req.on('response', go);
        req.on('close', go);
      });

    void (async () => {
      await write(head);
      const source = Buffer.isBuffer(options.content) ? [options.content] : options.content;
      for await (const chunk of source) {
        if (answered || req.destroyed) return;
        await write(chunk);
        if (!answered) bytesSent += chunk.length;
      }
      if (answered || req.destroyed) return;
      await write(tail);
      finishedSending = true;
      req.end();
    })().catch((error: unknown) => {
      req.destroy();
      if (!answered) reject(error);
    });
  });
}

/** `total` bytes of a repeating pseudo-random pattern, in `chunkSize` pieces, made as they are read. */
export async function* generatedBytes(total: number, chunkSize = 256 * 1024, seed = 7): AsyncGenerator<Buffer> {
  const block = patternBlock(chunkSize, seed);
  for (let sent = 0; sent < total; sent += chunkSize) {
    yield block.subarray(0, Math.min(chunkSize, total - sent));
  }
}

/** The bytes generatedBytes() produces, for comparing (only for sizes that fit in memory). */
export function generatedBuffer(total: number, chunkSize = 256 * 1024, seed = 7): Buffer {
  const block = patternBlock(chunkSize, seed);
  const out = Buffer.alloc(total);
  for (let offset = 0; offset < total; offset += chunkSize)
    block.copy(out, offset, 0, Math.min(chunkSize, total - offset));
  return out;
}

function patternBlock(size: number, seed: number): Buffer {
  // Not all zeros (which file-type or compression might treat specially) and not a known signature.
  const block = Buffer.alloc(size);
  let x = seed;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    block[i] = 0x20 + ((x >> 16) % 0x5f);
  }
  return block;
}
