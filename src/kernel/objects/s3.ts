/**
 * The S3 driver (AWS S3 or any S3-compatible store: tested against OpenStack Swift's s3api).
 * Streams go through lib-storage's Upload: multipart in 5 MiB parts (PART_SIZE), at most QUEUE_SIZE parts
 * in flight, so memory stays around (QUEUE_SIZE + 1) × 5 MiB whatever the object's size. The calls made once
 * per message (a put of bytes, get, head, delete of one key) go through the leaner signed requests of
 * s3-requests.ts; everything else through the SDK.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { AppError } from '../errors.ts';
import { collectUpTo } from '../read-up-to.ts';
import { assertValidPrefix } from './local.ts';
import { createSignedS3, S3CallError, storeIsBusy, type SignedS3 } from './s3-requests.ts';
import {
  assertValidKey,
  ObjectNotFoundError,
  storeUnavailable,
  type ObjectInfo,
  type ObjectStore,
  type PutOptions,
} from './store.ts';

export interface S3ObjectStoreOptions {
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  /** Create the bucket if it is missing, on the first put (ensureBucket() does it explicitly). */
  createBucket?: boolean;
  /** ListObjectsV2 page size (S3's maximum and default is 1,000); tests use a small one. */
  listPageSize?: number;
  /** Keys per DeleteObjects call (DELETE_CALL_KEYS by default); tests use a small one. */
  deleteBatchSize?: number;
  /** Per-attempt wait for the answer of a per-message call (5 s, 30 s for a put, by default); tests use a short one. */
  callTimeoutMs?: number;
}

export interface S3ObjectStore extends ObjectStore {
  readonly driver: 's3';
  /** Creates the bucket when it does not exist yet; idempotent. */
  ensureBucket(): Promise<void>;
}

/**
 * Multipart uploads hold about (QUEUE_SIZE + 1) parts in memory: the parts in flight and the one being
 * assembled. S3's smallest part (5 MiB) and two in flight keep that near 15 MiB per upload, so dozens of
 * concurrent uploads stay within a modest heap; larger parts would not be faster against a local server.
 */
const PART_SIZE = 5 * 1024 * 1024;
const QUEUE_SIZE = 2;
/** Small calls (head, delete, list pages, get until its headers) must answer quickly; per attempt. */
const SMALL = { requestTimeout: 5_000 };
/** A bulk delete: some S3-compatible stores (Swift) delete the keys one by one inside the call. */
const BULK = { requestTimeout: 60_000 };
/**
 * Keys per DeleteObjects call. S3 takes up to 1,000 (DELETE_MANY_MAX in store.ts), but Swift's s3api deletes
 * them one by one behind the call: bench/s3-deletes.ts measured 67–110 keys/s idle and 26–48 keys/s with
 * puts beside on these machines, whatever the call size, so calls of several hundred keys outlived the
 * client's 30 s socket limit under load (test/faults/s3-deletions.test.ts) and left their work to the sweep
 * with a warning per message. 100 keys took at most ~11 s under load, a third of the limit; on AWS a call
 * of 100 keys is still a fraction of a second.
 */
const DELETE_CALL_KEYS = 100;
/** Readiness checks want an answer sooner still: at most ~2 × 2 s with the one retry. */
const PING = { requestTimeout: 2_000 };

export function createS3ObjectStore(options: S3ObjectStoreOptions): S3ObjectStore {
  const client = createS3Client(options);
  const target: S3Target = { client, bucket: options.bucket, signed: createSignedS3FromSdk(client, options) };
  const ensureBucket = () => ensureBucketExists(target);
  const beforeWrite = bucketBeforeWrite(options, ensureBucket);
  return {
    driver: 's3',
    ensureBucket,

    async put(key: string, body: Readable | Buffer | string, putOptions: PutOptions = {}): Promise<ObjectInfo> {
      assertValidKey(key);
      await beforeWrite();
      if (typeof body === 'string' || Buffer.isBuffer(body)) return putBytes(target, key, body, putOptions);
      return putStream(target, key, body, putOptions);
    },
    get: (key: string) => getObject(target, key),
    getBytes: (key: string, max: number) => getObjectBytes(target, key, max),
    head: (key: string) => headObject(target, key),
    delete: (key: string) => deleteObject(target, key),
    deleteMany: (keys: string[]) => deleteObjects(target, keys, options.deleteBatchSize),
    list: (prefix: string) => listObjects(target, prefix, options.listPageSize),
    ping: () => pingBucket(target),
    async close(): Promise<void> {
      target.client.destroy();
      target.signed.close();
    },
  };
}

/** The clients and the bucket every operation addresses: the SDK's, and the lean one for per-message calls. */
interface S3Target {
  client: S3Client;
  bucket: string;
  signed: SignedS3;
}

/**
 * The lean client for the per-message calls (s3-requests.ts), addressing the bucket the SDK's endpoint rules
 * resolve (path style or virtual host, AWS or any endpoint), with the SDK's credentials: the given keys, or
 * its default chain, which refreshes expiring ones.
 */
function createSignedS3FromSdk(client: S3Client, options: S3ObjectStoreOptions): SignedS3 {
  const endpoint = client.config.endpointProvider({
    Bucket: options.bucket,
    Region: options.region,
    Endpoint: options.endpoint,
    ForcePathStyle: options.forcePathStyle,
    UseFIPS: false,
    UseDualStack: false,
    Accelerate: false,
  });
  return createSignedS3({
    bucketUrl: endpoint.url,
    region: options.region,
    credentials: () => client.config.credentials(),
    headersTimeoutMs: options.callTimeoutMs,
  });
}

function createS3Client(options: S3ObjectStoreOptions): S3Client {
  return new S3Client({
    endpoint: options.endpoint,
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    // Without explicit keys the SDK's default chain applies (env, profile, instance role).
    credentials:
      options.accessKeyId && options.secretAccessKey
        ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey }
        : undefined,
    // A dead server must fail a call within seconds (readiness checks and fault tests rely on it):
    // connect within 3 s, the response headers within 30 s for uploads (a 5 MiB part included; small
    // calls pass a shorter per-call limit), and no socket may sit idle for 30 s (covers response
    // bodies that stall mid-stream; long enough that a reader slowed by backpressure is not cut off).
    // One retry only.
    maxAttempts: 2,
    requestHandler: {
      connectionTimeout: 3_000,
      requestTimeout: 30_000,
      throwOnRequestTimeout: true,
      socketTimeout: 30_000,
    },
    // Newer SDKs add CRC32 checksums (aws-chunked trailers) by default, which S3-compatible servers
    // such as Swift 2.30 do not all understand; send and check them only where the API demands it.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/**
 * Bucket creation happens once, at start or before the first write, so it may wait out a store that is
 * busy for a moment: Swift answers 503 "Please reduce your request rate" while its account database is
 * locked by other writers. Up to BUSY_RETRIES more tries, 250 ms doubling (about 7.5 s in all); any other
 * error fails at once.
 */
const BUSY_RETRIES = 5;
const BUSY_FIRST_WAIT_MS = 250;

async function ensureBucketExists(target: S3Target): Promise<void> {
  for (let retry = 0; ; retry++) {
    try {
      return await headOrCreateBucket(target);
    } catch (error) {
      if (retry >= BUSY_RETRIES || !isBusy(error)) throw storeError(error, `Cannot create bucket ${target.bucket}`);
      await sleep(BUSY_FIRST_WAIT_MS * 2 ** retry);
    }
  }
}

async function headOrCreateBucket({ client, bucket }: S3Target): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }), SMALL);
    return;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }), SMALL);
  } catch (error) {
    // Another process may have created it in the meantime.
    const name = (error as { name?: string }).name;
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
  }
}

/** An SDK error of a store overloaded for now (storeIsBusy). */
function isBusy(error: unknown): boolean {
  return error instanceof S3ServiceException && storeIsBusy(error.$metadata?.httpStatusCode, error.name);
}

/** With createBucket, what each put awaits first: the bucket's creation, once it has succeeded. */
function bucketBeforeWrite(
  options: S3ObjectStoreOptions,
  ensureBucket: () => Promise<void>,
): () => Promise<void> | undefined {
  let bucketReady: Promise<void> | undefined;
  return () => {
    if (!options.createBucket) return undefined;
    // Remember success only, so a failed attempt (S3 down at start) is retried on the next put.
    bucketReady ??= ensureBucket().catch((error: unknown) => {
      bucketReady = undefined;
      throw error;
    });
    return bucketReady;
  };
}

async function putBytes(
  { signed }: S3Target,
  key: string,
  body: Buffer | string,
  { contentType, contentLength }: PutOptions,
): Promise<ObjectInfo> {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  checkLength(key, bytes.length, contentLength);
  try {
    await signed.put(key, bytes, contentType);
  } catch (error) {
    throw storeError(error, `Cannot store ${key}`);
  }
  return { key, size: bytes.length, contentType };
}

/**
 * Streams (known length or not) go through Upload: one PutObject when the body fits in one part,
 * multipart otherwise. The counter also enforces a declared contentLength before the upload
 * completes, so a short or long body fails instead of being stored.
 */
async function putStream(
  { client, bucket }: S3Target,
  key: string,
  body: Readable,
  { contentType, contentLength }: PutOptions,
): Promise<ObjectInfo> {
  const counter = new ByteCounter(key, contentLength);
  let sourceError: unknown;
  const source = body.on('error', (error) => {
    sourceError = error;
    counter.destroy(error);
  });
  source.pipe(counter);
  const upload = new Upload({
    client,
    params: { Bucket: bucket, Key: key, Body: counter, ContentType: contentType },
    partSize: PART_SIZE,
    queueSize: QUEUE_SIZE,
    leavePartsOnError: false, // Abort the multipart upload so no orphaned parts are billed.
  });
  try {
    await upload.done();
  } catch (error) {
    source.destroy();
    counter.destroy();
    // The caller's stream failing (or a length mismatch) is not the store's fault: no 503 for it.
    if (sourceError !== undefined) throw sourceError;
    throw storeError(error, `Cannot store ${key}`);
  }
  return { key, size: counter.bytes, contentType };
}

async function getObject({ signed }: S3Target, key: string): Promise<Readable> {
  assertValidKey(key);
  let body: Readable | undefined;
  try {
    body = await signed.get(key);
  } catch (error) {
    throw storeError(error, `Cannot read ${key}`);
  }
  if (!body) throw new ObjectNotFoundError(key);
  return body;
}

async function getObjectBytes(target: S3Target, key: string, max: number): Promise<Buffer | undefined> {
  const body = await getObject(target, key);
  // The answer says its length: a larger object is not read at all.
  const length = Number((body as Partial<IncomingMessage>).headers?.['content-length']);
  if (length > max) {
    body.destroy();
    return undefined;
  }
  try {
    return await collectUpTo(body, max);
  } catch (error) {
    throw storeError(error, `Cannot read ${key}`);
  }
}

async function headObject({ signed }: S3Target, key: string): Promise<ObjectInfo | undefined> {
  assertValidKey(key);
  try {
    const found = await signed.head(key);
    return found && { key, ...found };
  } catch (error) {
    throw storeError(error, `Cannot read ${key}`);
  }
}

async function deleteObject({ signed }: S3Target, key: string): Promise<void> {
  assertValidKey(key);
  try {
    await signed.delete(key);
  } catch (error) {
    throw storeError(error, `Cannot delete ${key}`);
  }
}

async function deleteObjects(target: S3Target, keys: string[], batch = DELETE_CALL_KEYS): Promise<void> {
  for (const key of keys) assertValidKey(key);
  for (let from = 0; from < keys.length; from += batch) {
    const chunk = keys.slice(from, from + batch);
    let errors: Array<{ Key?: string; Code?: string; Message?: string }> | undefined;
    try {
      // Quiet: the answer lists only the keys that failed, not every one deleted.
      const command = new DeleteObjectsCommand({
        Bucket: target.bucket,
        Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true },
      });
      withContentMd5(command);
      const answer = await target.client.send(command, BULK);
      errors = answer.Errors?.filter((error) => error.Code !== 'NoSuchKey');
    } catch (error) {
      throw storeError(error, `Cannot delete ${chunk.length} objects`);
    }
    if (errors && errors.length > 0) {
      const first = errors[0]!;
      throw storeUnavailable(
        `Cannot delete ${errors.length} of ${chunk.length} objects`,
        new Error(`${first.Key}: ${first.Code} ${first.Message ?? ''}`),
      );
    }
  }
}

/**
 * S3 requires an integrity header on DeleteObjects. The SDK, with checksums only WHEN_REQUIRED, sends a CRC32
 * one, which AWS takes and S3-compatible stores such as Swift's s3api refuse ("Missing required header for
 * this request: Content-MD5"); Content-MD5, which every S3 implementation takes, is added to the finished
 * request. The SDK has no option for it, hence this small middleware.
 */
function withContentMd5(command: DeleteObjectsCommand): void {
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string>; body?: unknown };
      if (request.headers && (typeof request.body === 'string' || Buffer.isBuffer(request.body))) {
        request.headers['content-md5'] = createHash('md5').update(request.body).digest('base64');
      }
      return next(args);
    },
    { step: 'build', name: 'sealpostContentMd5' },
  );
}

async function* listObjects(
  { client, bucket }: S3Target,
  prefix: string,
  pageSize: number | undefined,
): AsyncGenerator<ObjectInfo> {
  assertValidPrefix(prefix);
  let continuationToken: string | undefined;
  do {
    let page;
    try {
      page = await client.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix || undefined,
          ContinuationToken: continuationToken,
          MaxKeys: pageSize,
        }),
        SMALL,
      );
    } catch (error) {
      throw storeError(error, `Cannot list ${JSON.stringify(prefix)}`);
    }
    for (const item of page.Contents ?? []) {
      if (item.Key !== undefined) yield { key: item.Key, size: item.Size ?? 0, lastModified: item.LastModified };
    }
    continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (continuationToken);
}

async function pingBucket({ client, bucket }: S3Target): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }), PING);
  } catch (error) {
    throw storeError(error, `Object store bucket ${bucket} is not reachable`);
  }
}

/** Passes bytes through, counting them; fails the stream when a declared length is not met exactly. */
class ByteCounter extends Transform {
  bytes = 0;
  constructor(
    private readonly key: string,
    private readonly expected: number | undefined,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.expected !== undefined && this.bytes > this.expected) {
      callback(lengthError(this.key, this.bytes, this.expected));
      return;
    }
    callback(null, chunk);
  }
  override _flush(callback: TransformCallback): void {
    callback(
      this.expected !== undefined && this.bytes !== this.expected
        ? lengthError(this.key, this.bytes, this.expected)
        : null,
    );
  }
}

function checkLength(key: string, actual: number, expected: number | undefined): void {
  if (expected !== undefined && actual !== expected) throw lengthError(key, actual, expected);
}

function lengthError(key: string, actual: number, expected: number): AppError {
  const has = actual > expected ? `more than ${expected}` : String(actual);
  return new AppError('validation_failed', 400, `Body of ${key} has ${has} bytes but ${expected} were declared`);
}

/** A missing key (GET answers NoSuchKey, HEAD a bodiless 404). A missing bucket is a setup fault, not this. */
function isNotFound(error: unknown): boolean {
  if (!(error instanceof S3ServiceException) || error.name === 'NoSuchBucket') return false;
  return error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata?.httpStatusCode === 404;
}

/**
 * Anything else S3 answers (or fails to answer: refused, timed out) means the store is unavailable to
 * us right now: a 503 the HTTP layer can pass on; what failed and the SDK error stay in the log.
 */
function storeError(error: unknown, message: string): AppError {
  if (error instanceof AppError) return error;
  const detail =
    error instanceof S3CallError
      ? error.message
      : error instanceof Error
        ? `${error.name}: ${error.message}`
        : String(error);
  return storeUnavailable(`${message} (${detail})`, error);
}
