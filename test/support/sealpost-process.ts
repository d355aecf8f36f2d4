import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { seedEmbeddedDatabase } from './embedded-database.ts';
import { freePort } from './ports.ts';

export const SEALPOST_BIN = fileURLToPath(new URL('../../bin/sealpost.js', import.meta.url));
/** The compiled server of `npm run build`, run by plain node (what the Dockerfile runs). */
export const SEALPOST_BUILT = fileURLToPath(new URL('../../dist/server/cli/main.js', import.meta.url));

export interface SealpostProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  urls: { auth: string; seal: string; exchange: string };
  /** The process's metrics listener (METRICS_PORT): `${metricsUrl}/metrics`. */
  metricsUrl: string;
  ports: { auth: number; seal: number; exchange: number; smtp: number; ipfsProxy: number; metrics: number };
  /**
   * Moves the services' clock forward (only with NODE_ENV=test in env: the process then takes its time
   * from a clock its parent moves over the IPC channel) and resolves once the process has moved it.
   */
  advanceClock(ms: number): Promise<void>;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs `sealpost start <which>` as a child process on free loopback ports and waits for its banner.
 * Tests use it for what only a real process shows: start-up, signals, exit codes, a kill -9.
 */
export async function startSealpostProcess(
  env: Record<string, string>,
  options: {
    which?: string;
    timeoutMs?: number;
    built?: boolean;
    /** Let the process run initdb itself, as on a machine's first start (see embedded-database.ts). */
    freshDatabase?: boolean;
    /** Options for node itself, before the script (`--cpu-prof`, which NODE_OPTIONS does not take). */
    nodeArgs?: string[];
  } = {},
): Promise<SealpostProcess> {
  if (env.SEALPOST_DATA_DIR && !env.DATABASE_URL && !options.freshDatabase) {
    await seedEmbeddedDatabase(env.SEALPOST_DATA_DIR);
  }
  const ports = {
    auth: await freePort(),
    seal: await freePort(),
    exchange: await freePort(),
    smtp: await freePort(),
    ipfsProxy: await freePort(),
    ipfsCluster: await freePort(),
    metrics: await freePort(),
  };
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), options.built ? SEALPOST_BUILT : SEALPOST_BIN, 'start', options.which ?? 'all'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        LOG_LEVEL: 'info',
        AUTH_PORT: String(ports.auth),
        SEAL_PORT: String(ports.seal),
        EXCHANGE_PORT: String(ports.exchange),
        INBOUND_SMTP_PORT: String(ports.smtp),
        IPFS_PROXY_PORT: String(ports.ipfsProxy),
        IPFS_CLUSTER_PORT: String(ports.ipfsCluster),
        METRICS_PORT: String(ports.metrics),
        // SEAL_URL and EXCHANGE_URL unset: `start all` must find its services on the ports it was given.
        ...env,
      },
      // The IPC channel is how advanceClock reaches the process (with NODE_ENV=test only).
      stdio: env.NODE_ENV === 'test' ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (err += chunk));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  // The banner is on stdout with human logs, on stderr with JSON ones (a pipe's default).
  while (!out.includes('Sealpost is running.') && !err.includes('Sealpost is running.')) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`sealpost exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${err}\n${out}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`sealpost was not ready in time:\n${err}\n${out}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    ports,
    urls: {
      auth: `http://127.0.0.1:${ports.auth}`,
      seal: `http://127.0.0.1:${ports.seal}`,
      exchange: `http://127.0.0.1:${ports.exchange}`,
    },
    metricsUrl: `http://127.0.0.1:${ports.metrics}`,
    async advanceClock(ms: number) {
      if (env.NODE_ENV !== 'test') throw new Error('advanceClock needs NODE_ENV=test in the environment');
      const moved = once(child, 'message');
      child.send({ advanceClockMs: ms });
      await moved;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await exited;
      return code;
    },
  };
}
