// Readings from /proc (Linux) for the benchmarks: memory and CPU of a process or a process tree, and
// a one-line description of the machine and how busy it is.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

const MiB = 1024 * 1024;

function status(pid: number): string {
  return readFileSync(`/proc/${pid}/status`, 'utf8');
}

/** Resident set size now, in MiB. */
export function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(status(pid))?.[1] ?? 0) / 1024;
}

/** Highest resident set size since start (or since resetPeakRss), in MiB. */
export function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(status(pid))?.[1] ?? 0) / 1024;
}

/** Starts the peak (VmHWM) over from the current RSS, so a reading covers one phase only. Root only. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function statFields(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return raw.slice(raw.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** The parent of a process (e.g. PostgreSQL's postmaster, from one of its backends), if it still runs. */
export function parentPid(pid: number): number | undefined {
  const fields = statFields(pid);
  return fields ? Number(fields[1]) : undefined;
}

function children(pid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const fields = statFields(Number(name));
    if (fields && Number(fields[1]) === pid) found.push(Number(name));
  }
  return found;
}

/**
 * CPU time (user + system) of a process and all its descendants, in ms, counting children that have
 * already exited (their time is added to the parent when it reaps them); `kernel` is the system part.
 */
export function treeCpuTimes(pid: number): { total: number; kernel: number } {
  const fields = statFields(pid);
  if (!fields) return { total: 0, kernel: 0 };
  // Fields after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
  const times = { user: Number(fields[11]) + Number(fields[13]), kernel: Number(fields[12]) + Number(fields[14]) };
  const tree = { total: (times.user + times.kernel) * TICK_MS, kernel: times.kernel * TICK_MS };
  for (const child of children(pid)) {
    const own = treeCpuTimes(child);
    tree.total += own.total;
    tree.kernel += own.kernel;
  }
  return tree;
}

/** treeCpuTimes(pid).total. */
export function treeCpuMs(pid: number): number {
  return treeCpuTimes(pid).total;
}

/**
 * Node options that write the process's CPU profile into `dir` when it stops, named `name`.cpuprofile
 * (node's own name, with pid and time, without `name`); none without `dir`.
 */
export function cpuProfileArgs(dir: string | undefined, name?: string): string[] {
  if (!dir) return [];
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(name ? [`--cpu-prof-name=${name}.cpuprofile`] : [])];
}

/** RSS of a process and its descendants, in MiB (shared pages counted in each: an upper bound). */
export function treeRssMb(pid: number): number {
  let total = 0;
  try {
    total = rssMb(pid);
  } catch {
    return 0;
  }
  for (const child of children(pid)) total += treeRssMb(child);
  return total;
}

export function loadAverage(): string {
  return loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
}

/** Cores, CPU model, RAM, Node version, date and load average: the context every figure needs. */
export function machineLine(): string {
  const model = cpus()[0]?.model.replace(/\s+/g, ' ').trim() ?? 'unknown CPU';
  return (
    `${cpus().length} cores (${model}), ${(totalmem() / 1024 / MiB).toFixed(1)} GiB RAM, Node ${process.version}, ` +
    `${new Date().toISOString()}, load average ${loadAverage()}`
  );
}
