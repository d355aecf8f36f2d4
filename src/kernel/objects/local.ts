/**
 * The embedded default driver: one file per object under `dir`, the key being the relative path.
 *
 * - put streams into `dir/~tmp/<uuid>`, fsyncs it, renames it into place and fsyncs the folder, so a
 *   crash leaves either the old object or the new one under a key, never a partial file. `~` cannot
 *   occur in a key (see assertValidKey), so the temp folder never collides with an object.
 * - contentType is NOT kept (no sidecar files): head/list answer without it; callers that need it keep
 *   it with their own records. This keeps one file per object and the rename the only commit point.
 * - Unlike S3, a key cannot be both an object and a "folder" of other keys ("a" and "a/b"): a put
 *   that would need that is refused with a 409.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, constants, fstatSync, fsync, open as openFd, openSync, readSync, writeSync } from 'node:fs';
import { access, mkdir, open, readdir, rename, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { AppError } from '../errors.ts';
import { collectUpTo } from '../read-up-to.ts';
import {
  assertValidKey,
  ObjectNotFoundError,
  storeUnavailable,
  type ObjectInfo,
  type ObjectStore,
  type PutOptions,
} from './store.ts';

/** The temp folder's name inside `dir` (exported for tests). */
export const LOCAL_TEMP_DIR = '~tmp';
/** Temp files older than this are leftovers of a crash and are removed at start. */
const STALE_TEMP_MS = 60 * 60 * 1000;

export function createLocalObjectStore(options: { dir: string }): ObjectStore {
  const root = resolve(options.dir);
  const tempDir = join(root, LOCAL_TEMP_DIR);
  const pathOf = (key: string) => join(root, ...key.split('/'));
  const syncFolder = sharedFolderSync();

  /** Drops folders a deletion left empty so deleted keys leave no litter; stops at the first non-empty one. */
  const pruneEmptyFolders = async (from: string): Promise<void> => {
    for (let folder = from; folder.startsWith(`${root}/`); folder = dirname(folder)) {
      try {
        await rmdir(folder);
      } catch {
        break;
      }
    }
  };

  // Created lazily (the constructor is synchronous); a failure is retried on the next call.
  let ready: Promise<void> | undefined;
  const init = (): Promise<void> =>
    (ready ??= (async () => {
      await mkdir(tempDir, { recursive: true });
      await sweepStaleTemp(tempDir);
    })().catch((error: unknown) => {
      ready = undefined;
      throw error;
    }));

  const store: ObjectStore = {
    driver: 'local',

    async put(key: string, body: Readable | Buffer | string, putOptions: PutOptions = {}): Promise<ObjectInfo> {
      assertValidKey(key);
      await init();
      const temp = join(tempDir, randomUUID());
      const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.isBuffer(body) ? body : undefined;
      try {
        const size = bytes
          ? await writeBytesFile(temp, bytes)
          : await writeNewFile(temp, (handle) =>
              writeStream(handle, body as Readable, (total) =>
                checkLength(key, total, putOptions.contentLength, false),
              ),
            );
        checkLength(key, size, putOptions.contentLength, true);
        await commit(temp, pathOf(key), key, syncFolder);
        // The clock rather than an fstat: one system call less per object, and within a millisecond of
        // the file's mtime (head() and list() report the mtime itself).
        return { key, size, lastModified: new Date() };
      } catch (error) {
        await unlink(temp).catch(() => undefined);
        throw error;
      }
    },

    async get(key: string): Promise<Readable> {
      assertValidKey(key);
      let handle: FileHandle;
      try {
        handle = await open(pathOf(key), 'r');
      } catch (error) {
        if (isMissing(error)) throw new ObjectNotFoundError(key);
        throw error;
      }
      // Opening a directory succeeds on Linux; a folder of other keys is not an object.
      const info = await handle.stat();
      if (!info.isFile()) {
        await handle.close();
        throw new ObjectNotFoundError(key);
      }
      // Closes the handle when the stream ends or is destroyed. Objects never change in place (a put
      // renames a new file over the key), so the size is final: with `end` the stream stops after the
      // last byte instead of issuing one more read to find the end of the file.
      return handle.createReadStream(info.size > 0 ? { start: 0, end: info.size - 1 } : {});
    },

    async getBytes(key: string, max: number): Promise<Buffer | undefined> {
      assertValidKey(key);
      const read = readSmallObject(pathOf(key), key, max);
      // Too large to read without yielding: its stream, collected.
      return read === TOO_LARGE_FOR_SYNC ? collectUpTo(await store.get(key), max) : read;
    },

    async head(key: string): Promise<ObjectInfo | undefined> {
      assertValidKey(key);
      try {
        const info = await stat(pathOf(key));
        return info.isFile() ? { key, size: info.size, lastModified: info.mtime } : undefined;
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },

    async deleteMany(keys: string[]): Promise<void> {
      for (const key of keys) assertValidKey(key);
      // Files have no bulk call; the folders left empty are looked at once per batch rather than once per
      // key (an rmdir that fails on a folder still in use is the common case, and not free).
      const folders = new Set<string>();
      for (const key of keys) {
        const path = pathOf(key);
        if (await unlinkObject(path)) folders.add(dirname(path));
      }
      for (const folder of [...folders].sort((a, b) => b.length - a.length)) await pruneEmptyFolders(folder);
    },

    async delete(key: string): Promise<void> {
      assertValidKey(key);
      const path = pathOf(key);
      if (await unlinkObject(path)) await pruneEmptyFolders(dirname(path));
    },

    async *list(prefix: string): AsyncGenerator<ObjectInfo> {
      assertValidPrefix(prefix);
      yield* walk(prefix === '' ? root : pathOf(prefix.slice(0, -1)), prefix);
    },

    async ping(): Promise<void> {
      try {
        await init();
        await access(root, constants.R_OK | constants.W_OK);
      } catch (error) {
        throw storeUnavailable(`Object folder ${root} is not usable (${(error as Error).message})`, error);
      }
    },

    async close(): Promise<void> {
      // Nothing held open: every call opens and closes its own files.
    },
  };
  return store;
}

/*
 * A small read is synchronous, by choice (measured in bench/RESULTS.md, "Small reads without the thread
 * pool"). An asynchronous call is handed to one of libuv's pool threads and its answer back to the event
 * loop: two wake-ups that on a busy machine cost the process several times the call itself (a 10 KB
 * payload read: 130 µs of CPU as a stream, 60 µs as four pooled calls, 12 µs synchronous). In the
 * delivery engine under load the synchronous read held the event loop 25 µs per payload; past
 * SYNC_IO_MAX bytes it is streamed. A small put writes its bytes (into the page cache), closes its files
 * and opens its folder synchronously too, but what waits for the file system's journal stays asynchronous:
 * creating the file, both fsyncs, the rename and deletions (a synchronous unlink measured in the delivery
 * engine held the event loop 190 µs on average while PostgreSQL's commits kept the journal busy on the
 * same disk). That put is four pooled calls instead of eight (bench/RESULTS.md, "Fewer pooled calls per
 * put"). A disk where a read can take milliseconds (a network filesystem) is not what this driver is for:
 * use S3.
 */
const SYNC_IO_MAX = 256 * 1024;
const TOO_LARGE_FOR_SYNC = Symbol('too large for a synchronous read');

/** getBytes's read: the bytes, undefined past `max`, or TOO_LARGE_FOR_SYNC past SYNC_IO_MAX. */
function readSmallObject(path: string, key: string, max: number): Buffer | undefined | typeof TOO_LARGE_FOR_SYNC {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if (isMissing(error)) throw new ObjectNotFoundError(key);
    throw error;
  }
  try {
    const info = fstatSync(fd);
    // Opening a directory succeeds on Linux; a folder of other keys is not an object.
    if (!info.isFile()) throw new ObjectNotFoundError(key);
    if (info.size > max) return undefined;
    if (info.size > SYNC_IO_MAX) return TOO_LARGE_FOR_SYNC;
    // Objects never change in place (see get), so the size is final; the loop is for a short read.
    const bytes = Buffer.allocUnsafe(info.size);
    let at = 0;
    while (at < info.size) {
      const read = readSync(fd, bytes, at, info.size - at, at);
      if (read === 0) break;
      at += read;
    }
    return bytes.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

/** Removes an object's file; false when there was none (missing, or a folder of other keys). */
async function unlinkObject(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (error) {
    // Missing, or a folder of other keys (EISDIR on Linux, EPERM elsewhere): no object to delete.
    const code = (error as NodeJS.ErrnoException).code;
    if (isMissing(error) || code === 'EISDIR' || code === 'EPERM') return false;
    throw error;
  }
}

/** `list` takes "" (everything) or a folder-like prefix ending in "/" whose part before it is a valid key. */
export function assertValidPrefix(prefix: string): void {
  if (prefix === '') return;
  if (!prefix.endsWith('/')) {
    throw new AppError(
      'validation_failed',
      400,
      `Invalid list prefix ${JSON.stringify(prefix)}: must be empty or end with "/"`,
    );
  }
  assertValidKey(prefix.slice(0, -1));
}

/**
 * Moves the finished temp file onto the key's path and makes the rename itself durable. The folder
 * usually exists already, so the rename is tried first and the folder made only when it is missing.
 */
async function commit(
  temp: string,
  target: string,
  key: string,
  syncFolder: (folder: string) => Promise<void>,
): Promise<void> {
  const folder = dirname(target);
  // A concurrent delete may remove a just-created empty folder before our rename: try again then.
  for (let attempt = 1; ; attempt++) {
    try {
      await rename(temp, target);
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR' || code === 'EEXIST' || code === 'EISDIR') throw keyClash(key);
      if (code !== 'ENOENT' || attempt >= 3) throw error;
    }
    try {
      await mkdir(folder, { recursive: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR' || code === 'EEXIST') throw keyClash(key);
      throw error;
    }
  }
  await syncFolder(folder);
}

function keyClash(key: string): AppError {
  return new AppError(
    'conflict',
    409,
    `Key ${JSON.stringify(key)} clashes with another key used as its folder (or the reverse)`,
  );
}

/**
 * fsync of a folder, shared by concurrent puts (a group commit, as databases do for their log): a
 * caller whose rename is done joins the next fsync that starts after that moment — the running one
 * may have started before the rename, so it does not count. Under load, one directory fsync (the
 * costly part of a durable put on ext4) then covers many objects instead of one each.
 */
function sharedFolderSync(): (folder: string) => Promise<void> {
  const folders = new Map<string, { running?: Promise<void>; queued?: Promise<void> }>();
  return (folder) => {
    let state = folders.get(folder);
    if (!state) {
      state = {};
      folders.set(folder, state);
    }
    const current = state;
    if (current.queued) return current.queued;
    const start = (): Promise<void> => {
      const run = fsyncFolder(folder).finally(() => {
        if (current.running === run) current.running = undefined;
        if (!current.running && !current.queued && folders.get(folder) === current) folders.delete(folder);
      });
      current.running = run;
      return run;
    };
    if (!current.running) return start();
    current.queued = current.running
      .catch(() => undefined)
      .then(() => {
        current.queued = undefined;
        return start();
      });
    return current.queued;
  };
}

async function fsyncFolder(folder: string): Promise<void> {
  const fd = openSync(folder, 'r');
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

// The callback API on plain descriptors: a FileHandle's close() is one more pooled call.
const openFile = promisify(openFd);
const fsyncFd = promisify(fsync);

/** A new file with these bytes, fsynced; past SYNC_IO_MAX bytes they are written through the pool. */
async function writeBytesFile(path: string, bytes: Buffer): Promise<number> {
  if (bytes.length > SYNC_IO_MAX) {
    return writeNewFile(path, async (handle) => {
      await writeAll(handle, [bytes]);
      return bytes.length;
    });
  }
  const fd = await openFile(path, 'wx');
  try {
    // A short write (rare on a local file) continues where it stopped.
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
  return bytes.length;
}

/** A new file, written by `write` (which answers its length) and fsynced; its length. */
async function writeNewFile(path: string, write: (handle: FileHandle) => Promise<number>): Promise<number> {
  const handle = await open(path, 'wx');
  let size: number;
  try {
    size = await write(handle);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
  await handle.close();
  return size;
}

/** A declared contentLength must match exactly: fail as soon as the body runs over, or short at its end. */
function checkLength(key: string, size: number, declared: number | undefined, atEnd: boolean): void {
  if (declared === undefined || (atEnd ? size === declared : size <= declared)) return;
  const has = size > declared ? `more than ${declared}` : String(size);
  throw new AppError('validation_failed', 400, `Body of ${key} has ${has} bytes but ${declared} were declared`);
}

/** Bytes gathered from a stream before they are written: few large writes rather than one per chunk. */
const WRITE_BATCH_BYTES = 256 * 1024;

/**
 * Writes a stream to the file and returns its length. Chunks are gathered and written together, up to
 * WRITE_BATCH_BYTES at a time, so a message that arrives in many small chunks costs few writes. Like
 * pipeline(): a failed write destroys the stream (leaving the loop ends the iterator), and a stream
 * error rejects.
 */
async function writeStream(handle: FileHandle, body: Readable, onLength: (total: number) => void): Promise<number> {
  let size = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += bytes.length;
    onLength(size);
    pending.push(bytes);
    pendingBytes += bytes.length;
    if (pendingBytes >= WRITE_BATCH_BYTES) {
      await writeAll(handle, pending);
      pending = [];
      pendingBytes = 0;
    }
  }
  if (pending.length > 0) await writeAll(handle, pending);
  return size;
}

async function writeAll(handle: FileHandle, buffers: Buffer[]): Promise<void> {
  const left = buffers.filter((b) => b.length > 0);
  while (left.length > 0) {
    const { bytesWritten } = await handle.writev(left);
    // A short write (rare on a local file) continues where it stopped.
    let skip = bytesWritten;
    while (left.length > 0 && skip >= left[0]!.length) skip -= left.shift()!.length;
    if (skip > 0) left[0] = left[0]!.subarray(skip);
  }
}

/**
 * Depth-first in key order. S3 orders keys by their bytes; a folder's keys continue with "/", so a
 * folder sorts as `name/` among its siblings (e.g. "a-b" < "a/x" < "a0" as '-' < '/' < '0').
 * Keys are ASCII (assertValidKey), so comparing JS strings compares bytes.
 */
async function* walk(folder: string, keyPrefix: string): AsyncGenerator<ObjectInfo> {
  let entries;
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (error) {
    if (isMissing(error)) return;
    throw error;
  }
  const items = entries
    .filter((entry) => (entry.isFile() || entry.isDirectory()) && isKeySegment(entry.name))
    .map((entry) => ({ entry, sortKey: entry.isDirectory() ? `${entry.name}/` : entry.name }))
    .sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
  for (const { entry } of items) {
    const key = keyPrefix + entry.name;
    if (entry.isDirectory()) {
      yield* walk(join(folder, entry.name), `${key}/`);
      continue;
    }
    try {
      const info = await stat(join(folder, entry.name));
      yield { key, size: info.size, lastModified: info.mtime };
    } catch (error) {
      if (!isMissing(error)) throw error; // Deleted while we walked: skip it.
    }
  }
}

/** Skips the temp folder and anything else that no valid key could have produced. */
function isKeySegment(name: string): boolean {
  try {
    assertValidKey(name);
    return true;
  } catch {
    return false;
  }
}

async function sweepStaleTemp(tempDir: string): Promise<void> {
  const cutoff = Date.now() - STALE_TEMP_MS;
  for (const name of await readdir(tempDir)) {
    const path = join(tempDir, name);
    const info = await stat(path).catch(() => undefined);
    if (info && info.mtimeMs < cutoff) await rm(path, { force: true, recursive: true });
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
