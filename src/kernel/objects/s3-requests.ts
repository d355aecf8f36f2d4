/**
 * The S3 calls made once per message (a small payload's PutObject, GetObject, HeadObject, DeleteObject) as
 * SigV4-signed requests (aws4) on keep-alive sockets. Why not the SDK for these: a CPU profile of the
 * exchange on S3 put a third of its busy time in the SDK's per-call middleware stack, about 1.2–1.8 ms a
 * call, where aws4's signature and one node:http request cost a fraction of that (bench/RESULTS.md). The
 * SDK keeps every other call (bucket, list, bulk delete, multipart uploads) and still resolves the
 * credentials (its default chain, refreshed as they expire) and the bucket's endpoint for these.
 *
 * What is written here by hand is therefore only what the SDK's middleware did for these four calls: the
 * key's path, the timeouts, one retry, and reading S3's XML error code.
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import aws4 from 'aws4';

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SignedS3Options {
  /** The bucket's base address as the SDK resolves it: `http://host:port/bucket` (path style) or
   * `https://bucket.s3.region.amazonaws.com` (virtual host). */
  bucketUrl: URL;
  region: string;
  credentials: () => Promise<S3Credentials>;
  /** How long a call may wait for the answer's headers, per attempt; HEADERS_TIMEOUT_MS unless given (tests). */
  headersTimeoutMs?: number;
}

/** An answer other than success, or no answer: `code` is S3's error code, or the network error's. */
export class S3CallError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly code: string,
  ) {
    super(message);
    this.name = 'S3CallError';
  }
  /** 404 for the key itself; a missing bucket is a setup fault, not a missing object. */
  get keyMissing(): boolean {
    return this.status === 404 && this.code !== 'NoSuchBucket';
  }
}

/** The limits the SDK client had (s3.ts): connect and headers within these, no socket idle for 30 s. */
const HEADERS_TIMEOUT_MS = { small: 5_000, put: 30_000 };
const SOCKET_IDLE_MS = 30_000;
/** Two attempts in all, as the SDK's maxAttempts: 2; every call here is idempotent. */
const ATTEMPTS = 2;
/** The SDK's default socket limit per host. */
const MAX_SOCKETS = 50;

/** One request: what call() may send twice. */
interface Call {
  method: 'PUT' | 'GET' | 'HEAD' | 'DELETE';
  key: string;
  body?: Buffer;
  headers?: Record<string, string>;
  /** How long to wait for the answer's headers, per attempt. */
  headersTimeoutMs: number;
}

export interface SignedS3 {
  put(key: string, body: Buffer, contentType: string | undefined): Promise<void>;
  /** The body as a stream, or undefined when there is no such key. */
  get(key: string): Promise<Readable | undefined>;
  head(key: string): Promise<{ size: number; lastModified?: Date; contentType?: string } | undefined>;
  /** Deletes the key; a missing key is not an error. */
  delete(key: string): Promise<void>;
  close(): void;
}

export function createSignedS3(options: SignedS3Options): SignedS3 {
  const { bucketUrl, region } = options;
  const secure = bucketUrl.protocol === 'https:';
  const agent = secure
    ? new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, noDelay: true })
    : new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, noDelay: true });
  const request = secure ? https.request : http.request;
  const basePath = bucketUrl.pathname.replace(/\/$/, '');
  const small = options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS.small;

  async function call(what: Call): Promise<http.IncomingMessage> {
    for (let attempt = 1; ; attempt++) {
      let error: S3CallError;
      try {
        const response = await once(what);
        if (response.statusCode! < 300) return response;
        error = await answerError(what.method, what.key, response);
      } catch (failure) {
        // No answer at all (refused, reset, timed out): worth one more try, as a 5xx is.
        if (!(failure instanceof S3CallError)) throw failure;
        error = failure;
      }
      const retriable = error.status === undefined || error.status >= 500;
      if (!retriable || attempt >= ATTEMPTS) throw error;
      await sleep(retryDelayMs(error, attempt));
    }
  }

  async function once({ method, key, body, headers = {}, headersTimeoutMs }: Call): Promise<http.IncomingMessage> {
    const signed = aws4.sign(
      {
        host: bucketUrl.host,
        path: `${basePath}/${encodeKey(key)}`,
        method,
        service: 's3',
        region,
        // A string: aws4 adds its own Content-Length when ours is falsy, and a 0 signed twice fails the signature.
        headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        body,
      },
      await options.credentials(),
    );
    return new Promise((resolve, reject) => {
      const fail = (code: string, message: string) => reject(new S3CallError(message, undefined, code));
      const req = request({
        agent,
        protocol: bucketUrl.protocol,
        hostname: bucketUrl.hostname,
        port: bucketUrl.port,
        method,
        path: signed.path,
        headers: signed.headers,
      });
      const headersTimer = setTimeout(() => {
        req.destroy();
        fail('TimeoutError', `${method} ${key}: no answer within ${headersTimeoutMs} ms`);
      }, headersTimeoutMs);
      // Covers a connection that stalls mid-way, the response body included, until the socket is freed.
      req.setTimeout(SOCKET_IDLE_MS, () => req.destroy(new Error(`socket idle for ${SOCKET_IDLE_MS} ms`)));
      req.on('response', (response) => {
        clearTimeout(headersTimer);
        resolve(response);
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(headersTimer);
        fail(error.code ?? error.name, `${method} ${key}: ${error.message}`);
      });
      req.end(body);
    });
  }

  return {
    async put(key, body, contentType) {
      const headers = contentType ? { 'content-type': contentType } : undefined;
      const headersTimeoutMs = options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS.put;
      const response = await call({ method: 'PUT', key, body, headers, headersTimeoutMs });
      response.resume();
    },
    async get(key) {
      try {
        return await call({ method: 'GET', key, headersTimeoutMs: small });
      } catch (error) {
        if (error instanceof S3CallError && error.keyMissing) return undefined;
        throw error;
      }
    },
    async head(key) {
      let response: http.IncomingMessage;
      try {
        response = await call({ method: 'HEAD', key, headersTimeoutMs: small });
      } catch (error) {
        if (error instanceof S3CallError && error.keyMissing) return undefined;
        throw error;
      }
      response.resume();
      const modified = response.headers['last-modified'];
      return {
        size: Number(response.headers['content-length'] ?? 0),
        ...(modified ? { lastModified: new Date(modified) } : {}),
        ...(response.headers['content-type'] ? { contentType: response.headers['content-type'] } : {}),
      };
    },
    async delete(key) {
      try {
        (await call({ method: 'DELETE', key, headersTimeoutMs: small })).resume();
      } catch (error) {
        // S3 answers 204 for a missing key already; this covers stores that answer 404.
        if (!(error instanceof S3CallError && error.keyMissing)) throw error;
      }
    },
    close() {
      agent.destroy();
    },
  };
}

/**
 * The SDK's standard retry delay: a random wait up to 2^attempt × 100 ms, or × 500 ms when the store asked
 * to slow down (503, SlowDown), so that retries of many callers spread out instead of arriving together.
 */
function retryDelayMs(error: S3CallError, attempt: number): number {
  const throttled = storeIsBusy(error.status, error.code);
  return Math.floor(Math.random() * 2 ** attempt * (throttled ? 500 : 100));
}

/** The store said it is overloaded for now (503, SlowDown), as opposed to refusing the request. */
export function storeIsBusy(status: number | undefined, code: string): boolean {
  return status === 503 || code === 'SlowDown' || code === 'ServiceUnavailable';
}

/** Each segment percent-encoded as S3 expects (RFC 3986 unreserved characters kept), slashes kept. */
function encodeKey(key: string): string {
  return key
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join('/');
}

/** An error answer: S3's XML `<Code>` and `<Message>` (HEAD answers have no body: the status names it). */
async function answerError(method: string, key: string, response: http.IncomingMessage): Promise<S3CallError> {
  const status = response.statusCode!;
  let text = '';
  try {
    for await (const chunk of response) if (text.length < 4096) text += String(chunk);
  } catch {
    // A broken error body still has its status.
  }
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? (status === 404 ? 'NotFound' : `HTTP${status}`);
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? response.statusMessage ?? '';
  return new S3CallError(`${method} ${key}: ${status} ${code} ${message}`.trim(), status, code);
}
