/**
 * A throwaway ClamAV daemon for tests, adapted from /work/shared/reference/clamd-test.sh: Debian's
 * clamav-daemon with no downloaded signatures, its only database a custom EICAR signature, so it flags
 * the EICAR test string and passes everything else, with the archive limits Sealpost ships (so a zip
 * bomb is refused). Starts in ~80 ms (about 18 MB of memory).
 *
 * It must not outlive the test process, even one that dies without running any handler: clamd runs
 * under `setpriv --pdeathsig KILL`, so the kernel kills it when this process goes; stop() and an 'exit'
 * handler cover the orderly ways out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.ts';

export interface ClamdTestServer {
  host: string;
  port: number;
  /** For the service: CLAMD_HOST and CLAMD_PORT. */
  env: { CLAMD_HOST: string; CLAMD_PORT: string };
  stop(): Promise<void>;
}

/** The 68-byte EICAR anti-virus test file (harmless; every scanner reports it). */
export const EICAR = Buffer.from('X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*', 'latin1');

const CLAMD = ['/usr/sbin/clamd', '/usr/bin/clamd'].find((path) => existsSync(path)) ?? 'clamd';
const START_TIMEOUT_MS = 30_000;

const live = new Set<ChildProcess>();
let exitHandlerInstalled = false;

/**
 * The archive limits of deploy/clamd/clamd.conf, scaled to the stream limit: a file is never refused
 * for being as large as the stream clamd takes (MaxFileSize), while an archive unpacking to more than
 * twice that, or nesting deeper than 17 levels, is (AlertExceedsMax: a Heuristics.Limits.Exceeded.* FOUND
 * verdict, where without it clamd would answer OK for what it did not scan).
 */
function archiveLimits(streamMaxLength: string): string[] {
  const megabytes = /^(\d+)M$/.exec(streamMaxLength);
  if (!megabytes)
    throw new Error(`streamMaxLength is given in megabytes ("50M"), not ${JSON.stringify(streamMaxLength)}`);
  return [
    `MaxFileSize ${streamMaxLength}`,
    `MaxScanSize ${2 * Number(megabytes[1])}M`,
    'MaxRecursion 17',
    'MaxFiles 10000',
    'AlertExceedsMax yes',
  ];
}

/** Starts clamd on a free port of 127.0.0.1 in a temp folder; resolves once it answers PING with PONG. */
export async function startClamd(options: { streamMaxLength?: string } = {}): Promise<ClamdTestServer> {
  const streamMaxLength = options.streamMaxLength ?? '50M';
  const dir = await mkdtemp(join(tmpdir(), 'sealpost-clamd-'));
  const host = '127.0.0.1';
  const port = await freePort();
  // MD5:size:name of the 68-byte file, and the same bytes as a body signature found anywhere (ndb).
  await writeFile(join(dir, 'eicar.hdb'), '44d88612fea8a8f36de82e1278abb02f:68:Eicar-Test-Signature\n');
  await writeFile(join(dir, 'eicar.ndb'), `Eicar-Test-Signature:0:*:${EICAR.toString('hex')}\n`);
  await writeFile(
    join(dir, 'clamd.conf'),
    [
      `DatabaseDirectory ${dir}`,
      `TemporaryDirectory ${dir}`,
      `TCPSocket ${port}`,
      `TCPAddr ${host}`,
      'Foreground yes',
      `LogFile ${join(dir, 'clamd.log')}`,
      `StreamMaxLength ${streamMaxLength}`,
      ...archiveLimits(streamMaxLength),
      '',
    ].join('\n'),
  );

  if (!exitHandlerInstalled) {
    exitHandlerInstalled = true;
    process.on('exit', () => {
      for (const child of live) child.kill('SIGKILL');
    });
  }
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', CLAMD, '-c', join(dir, 'clamd.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  live.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = once(child, 'exit');

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      // clamd may take a moment to shut down; never wait for it forever.
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
    live.delete(child);
    await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answersPing(host, port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const log = await readFile(join(dir, 'clamd.log'), 'utf8').catch(() => '');
      await stop();
      throw new Error(
        `clamd did not answer PING on ${host}:${port}:\n${stderr}\n${log.split('\n').slice(-20).join('\n')}`,
      );
    }
    await sleep(30);
  }
  return { host, port, env: { CLAMD_HOST: host, CLAMD_PORT: String(port) }, stop };
}

function answersPing(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('connect', () => socket.write('zPING\0'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      if (reply.includes('\0')) done(reply.startsWith('PONG'));
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(reply.startsWith('PONG')));
  });
}
