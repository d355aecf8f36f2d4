import { randomUUID } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { link, mkdir, readFile, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * One process per embedded data folder (docs/decisions.md#one-process-per-data-folder). The embedded
 * PGlite database is one process's files: a second process opening them writes over the first one's
 * pages, and sealed mail whose reader links went out answers 404 after the next restart.
 *
 * A lock file in the folder names the holder (pid, host, command, since). It is created atomically
 * with its content (written beside it, then hard-linked into place: link fails if the name exists),
 * so a reader never sees a half-written one. No lock library is a dependency here (proper-lockfile is
 * not installed), and this is what it would do for one file: the holder refreshes the file's mtime,
 * and a lock is stale when its holder's pid is gone on this host, or when nobody refreshed it for
 * STALE_AFTER_MS (a holder on another host, or a pid reused after a reboot).
 */

export const LOCK_FILE = 'sealpost.lock';
const REFRESH_MS = 10_000;
const STALE_AFTER_MS = 60_000;

export interface LockHolder {
  pid: number;
  host: string;
  command: string;
  since: string;
}

export interface DataLock {
  file: string;
  release(): Promise<void>;
}

export class DataFolderInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
  ) {
    super(
      `SEALPOST_DATA_DIR=${dataDir} is in use by another Sealpost: process ${holder.pid} on ${holder.host} ` +
        `(${holder.command}, since ${holder.since}). One process at a time opens an embedded data folder: ` +
        'a second one would damage its PGlite database. Stop that process, or give this one its own ' +
        'SEALPOST_DATA_DIR; to run the services as separate processes, set DATABASE_URL (PostgreSQL) and the ' +
        'same ADMIN_TOKEN and SERVICE_TOKEN in each.',
    );
    this.name = 'DataFolderInUse';
  }
}

/** Takes the lock of `dataDir` for this process, or throws DataFolderInUse naming the live holder. */
export async function lockDataFolder(dataDir: string, command: string): Promise<DataLock> {
  const dir = resolve(dataDir);
  await mkdir(dir, { recursive: true });
  const file = join(dir, LOCK_FILE);
  const mine: LockHolder = { pid: process.pid, host: hostname(), command, since: new Date().toISOString() };
  const text = `${JSON.stringify(mine)}\n`;
  for (let attempt = 0; ; attempt++) {
    if (await createWithContent(file, text)) break;
    const found = await readLock(file);
    if (found && !(await isStale(found))) throw new DataFolderInUse(dir, found.holder);
    if (attempt >= 3) throw new Error(`${file} could not be taken over (another process keeps taking it)`);
    // Stale: removed only if it is still the one judged stale, then taken like a new one.
    const again = await readLock(file);
    if (again?.raw === found?.raw) await unlink(file).catch(() => {});
  }

  const refresh = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => {});
  }, REFRESH_MS);
  refresh.unref();
  // A process that exits without stopping (an uncaught error, process.exit on a hung shutdown) still
  // leaves the folder free; a kill -9 leaves a lock whose dead pid the next start sees.
  const onExit = () => {
    try {
      unlinkSync(file);
    } catch {
      // gone already
    }
  };
  process.once('exit', onExit);
  return {
    file,
    async release() {
      clearInterval(refresh);
      process.off('exit', onExit);
      const current = await readLock(file);
      if (current?.raw === text) await unlink(file).catch(() => {});
    },
  };
}

/** Who holds the lock of `dataDir`, when a live process does (for `sealpost check`); nothing is written. */
export async function dataFolderHolder(dataDir: string): Promise<LockHolder | undefined> {
  const found = await readLock(join(resolve(dataDir), LOCK_FILE));
  return found && !(await isStale(found)) ? found.holder : undefined;
}

async function createWithContent(file: string, text: string): Promise<boolean> {
  const temp = `${file}.${process.pid}.${randomUUID()}`;
  await writeFile(temp, text, { mode: 0o644 });
  try {
    await link(temp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(temp).catch(() => {});
  }
}

interface FoundLock {
  raw: string;
  holder: LockHolder;
  mtimeMs: number;
}

async function readLock(file: string): Promise<FoundLock | undefined> {
  try {
    const [raw, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    let holder: LockHolder;
    try {
      holder = JSON.parse(raw) as LockHolder;
    } catch {
      // Not ours to read: stale by its age alone.
      holder = { pid: 0, host: '?', command: '?', since: new Date(info.mtimeMs).toISOString() };
    }
    return { raw, holder, mtimeMs: info.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function isStale(found: FoundLock): Promise<boolean> {
  if (Date.now() - found.mtimeMs > STALE_AFTER_MS) return true;
  const { pid, host } = found.holder;
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0) return false;
  // A container restarts its one process as pid 1 again: its own pid in the lock is a former life's.
  if (pid === process.pid) return true;
  return !alive(pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
