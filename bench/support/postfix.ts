// A private Postfix instance as a baseline: its own configuration and queue in a temp folder, smtpd bound
// to 127.0.0.1 only, mail kept in the `incoming` queue (no qmgr, so nothing is delivered). cleanup(8)
// fsyncs each queue file before smtpd answers 250, the same promise Sealpost's 250 makes. Postfix's own
// `postfix start` refuses a configuration folder not listed in /etc/postfix/main.cf, so master(8) is
// run directly; it needs root (it drops to the `postfix` user for the daemons).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { stopOnExit } from './cleanup.ts';

const MASTER = '/usr/lib/postfix/sbin/master';

export interface PrivatePostfix {
  port: number;
  /** The master process, for RSS readings (smtpd and cleanup run as its children). */
  masterPid: number;
  dir: string;
  /** Queue files written so far (messages Postfix answered 250 for). */
  queued(): Promise<number>;
  stop(): Promise<void>;
}

/** Why no private Postfix can run here, or undefined when one can. */
export function postfixUnavailable(): string | undefined {
  if (!existsSync(MASTER)) return 'Postfix is not installed (Debian package postfix)';
  if (userInfo().uid !== 0) return 'a private Postfix needs root (master(8) starts as root)';
  return undefined;
}

export async function startPrivatePostfix(port: number): Promise<PrivatePostfix> {
  const dir = await mkdtemp(join(tmpdir(), 'sealpost-bench-postfix-'));
  await chmod(dir, 0o755); // mkdtemp makes it 0700: the daemons run as the postfix user
  const conf = join(dir, 'conf');
  const queue = join(dir, 'queue');
  const uid = (name: string) => Number(execFileSync('id', ['-u', name]).toString().trim());
  const gid = (group: string) => Number(execFileSync('getent', ['group', group]).toString().split(':')[2]);
  const postfixUid = uid('postfix');
  const postdropGid = gid('postdrop');

  await mkdir(conf, { recursive: true });
  await mkdir(join(dir, 'data'), { recursive: true });
  await chown(join(dir, 'data'), postfixUid, 0);
  await mkdir(join(queue, 'pid'), { recursive: true });
  for (const name of [
    'incoming',
    'active',
    'deferred',
    'defer',
    'bounce',
    'trace',
    'flush',
    'hold',
    'corrupt',
    'saved',
    'private',
  ]) {
    await mkdir(join(queue, name), { recursive: true });
    await chown(join(queue, name), postfixUid, 0);
    await chmod(join(queue, name), 0o700);
  }
  for (const [name, mode] of [
    ['public', 0o710],
    ['maildrop', 0o730],
  ] as const) {
    await mkdir(join(queue, name), { recursive: true });
    await chown(join(queue, name), postfixUid, postdropGid);
    await chmod(join(queue, name), mode);
  }
  await writeFile(
    join(conf, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${queue}`,
      `data_directory = ${join(dir, 'data')}`,
      'command_directory = /usr/sbin',
      'daemon_directory = /usr/lib/postfix/sbin',
      'meta_directory = /etc/postfix',
      'shlib_directory = /usr/lib/postfix',
      'mail_owner = postfix',
      'setgid_group = postdrop',
      'myhostname = bench.localdomain',
      'mydestination =',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'smtpd_recipient_restrictions = permit_mynetworks, reject',
      'smtpd_peername_lookup = no',
      `maillog_file = ${join(dir, 'maillog')}`,
      `maillog_file_prefixes = ${dir}`,
      'alias_maps =',
      'alias_database =',
      'biff = no',
      'message_size_limit = 67108864',
      'smtpd_client_connection_count_limit = 0',
      'smtpd_client_connection_rate_limit = 0',
      'default_process_limit = 200',
      // No qmgr hands out flow-control tokens here: without this, cleanup pauses 1 s per message.
      'in_flow_delay = 0s',
      '',
    ].join('\n'),
  );
  // smtpd, cleanup and the services they call; no qmgr, so accepted mail stays in the incoming queue.
  await writeFile(
    join(conf, 'master.cf'),
    [
      `127.0.0.1:${port} inet n - n - - smtpd`,
      'cleanup   unix  n - n - 0 cleanup',
      'rewrite   unix  - - n - - trivial-rewrite',
      'anvil     unix  - - n - 1 anvil',
      'proxymap  unix  - - n - - proxymap',
      'postlog   unix-dgram n - n - 1 postlogd',
      '',
    ].join('\n'),
  );

  const master = stopOnExit(spawn(MASTER, ['-c', conf, '-d'], { cwd: dir, stdio: 'ignore' }));
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (master.exitCode !== null)
      throw new Error(`Postfix master exited (${master.exitCode}); see ${join(dir, 'maillog')}`);
    if (Date.now() > deadline) {
      master.kill('SIGKILL');
      throw new Error('Postfix did not listen within 10 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    masterPid: master.pid!,
    dir,
    async queued() {
      const log = await readFile(join(dir, 'maillog'), 'utf8').catch(() => '');
      return (log.match(/postfix\/cleanup\[\d+\]: [0-9A-F]+: message-id=/g) ?? []).length;
    },
    async stop() {
      if (master.exitCode === null) {
        const exited = new Promise((resolve) => master.once('exit', resolve));
        master.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
