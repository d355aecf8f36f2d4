import type { Readable } from 'node:stream';
import { AppError, unavailable } from '../errors.ts';

export interface ObjectInfo {
  key: string;
  size: number;
  lastModified?: Date;
  contentType?: string;
}

export interface PutOptions {
  /** Known length lets a driver skip multipart for small bodies; unknown lengths are streamed. */
  contentLength?: number;
  contentType?: string;
}

/**
 * Every object-store driver, and the only list of them: ObjectStoreDriver comes from it, and the
 * registry (index.ts) maps each name to how its store is made.
 */
export const OBJECT_STORE_DRIVERS = ['local', 's3'] as const;
export type ObjectStoreDriver = (typeof OBJECT_STORE_DRIVERS)[number];

/**
 * One interface for every object-store driver (S3, local disk). Bodies are streams: no driver holds a
 * whole object in memory, except what getBytes is asked for, up to the bound its caller gives. Keys are
 * relative, slash-separated paths checked by `assertValidKey`.
 */
export interface ObjectStore {
  readonly driver: ObjectStoreDriver;
  /** Stores the body under `key`, replacing any object there; resolves once the object is durable. */
  put(key: string, body: Readable | Buffer | string, options?: PutOptions): Promise<ObjectInfo>;
  /** A stream of the object's bytes; rejects with ObjectNotFoundError when there is none. */
  get(key: string): Promise<Readable>;
  /**
   * The object's bytes in one Buffer when it holds at most `max` of them, else undefined (stream it with
   * get()); rejects with ObjectNotFoundError when there is none. For callers that need a small object
   * whole: cheaper than collecting get()'s stream (S3 does not read an answer that is too long; local disk
   * reads with synchronous calls, see local.ts).
   */
  getBytes(key: string, max: number): Promise<Buffer | undefined>;
  /** The object's size and metadata, or undefined when there is none. */
  head(key: string): Promise<ObjectInfo | undefined>;
  /** Deletes the object; deleting a missing key is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Deletes these objects (missing keys are not an error): on S3 one DeleteObjects call per 100 keys
   * (s3.ts, DELETE_CALL_KEYS) instead of a call each, for callers that delete in bulk.
   */
  deleteMany(keys: string[]): Promise<void>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /** Throws when the store cannot be reached (used by /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The most keys one S3 DeleteObjects call takes, and the most a caller hands deleteMany at once. */
export const DELETE_MANY_MAX = 1000;

/** What a client is told when the store fails, whichever driver and whatever the reason. */
export const STORE_UNAVAILABLE = 'Object storage is unavailable; try again later';

/**
 * A 503 for a store that cannot serve us. The SDK's error, the bucket, the key or a folder path would
 * describe the deployment to whoever sent the request, so they go on `cause`, which the HTTP layer logs.
 */
export function storeUnavailable(detail: string, cause: unknown): AppError {
  return unavailable(STORE_UNAVAILABLE, new Error(detail, { cause }));
}

export class ObjectNotFoundError extends AppError {
  constructor(readonly key: string) {
    super('not_found', 404, `No object stored under ${JSON.stringify(key)}`);
    this.name = 'ObjectNotFoundError';
  }
}

const KEY_SEGMENT = /^[A-Za-z0-9._=@+-]+$/;

/**
 * Keys become file paths in the local driver, so anything that could climb out of the store's folder
 * (`..`, absolute paths, backslashes, NUL) is refused for every driver alike.
 */
export function assertValidKey(key: string): void {
  const ok =
    key.length > 0 &&
    key.length <= 1024 &&
    key.split('/').every((segment) => segment !== '.' && segment !== '..' && KEY_SEGMENT.test(segment));
  if (!ok) throw new AppError('validation_failed', 400, `Invalid object key ${JSON.stringify(key)}`);
}
