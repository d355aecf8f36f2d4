import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createTransport } from 'nodemailer';
import { Reader } from './support/auth-reader.ts';
import { seedEmbeddedDatabase } from './support/embedded-database.ts';
import { freePort } from './support/ports.ts';
import { SEALPOST_BIN, startSealpostProcess } from './support/sealpost-process.ts';

/**
 * What a person sees after `npm start` in a terminal (docs/operating.md#logs): `script` gives the process a
 * real pseudo-terminal, so the LOG_FORMAT=auto choice is the one a terminal gets. The log lines are human,
 * requests stay out of them at the default level, the default start warns about nothing, and the two things a
 * developer looks for, the reader link and the sign-in code, each stand on a line of their own.
 */
interface Terminal {
  child: ChildProcess;
  output: () => string;
  ports: { auth: number; exchange: number; smtp: number };
}

const running: ChildProcess[] = [];
after(() => {
  for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
});

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r/g, '');

async function startInTerminal(env: Record<string, string>): Promise<Terminal> {
  const ports = {
    auth: await freePort(),
    seal: await freePort(),
    exchange: await freePort(),
    smtp: await freePort(),
    ipfsProxy: await freePort(),
    ipfsCluster: await freePort(),
    metrics: await freePort(),
  };
  const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-logs-'));
  await seedEmbeddedDatabase(dataDir);
  const child = spawn(
    'script',
    ['-qfec', `${JSON.stringify(process.execPath)} ${JSON.stringify(SEALPOST_BIN)} start all`, '/dev/null'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        TERM: 'xterm',
        SEALPOST_DATA_DIR: dataDir,
        AUTH_PORT: String(ports.auth),
        SEAL_PORT: String(ports.seal),
        EXCHANGE_PORT: String(ports.exchange),
        INBOUND_SMTP_PORT: String(ports.smtp),
        IPFS_PROXY_PORT: String(ports.ipfsProxy),
        IPFS_CLUSTER_PORT: String(ports.ipfsCluster),
        METRICS_PORT: String(ports.metrics),
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  running.push(child);
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const terminal = { child, output: () => plain(out), ports };
  await waitFor(terminal, /Sealpost is running\.[\s\S]*Generated SERVICE_TOKEN/, 'the banner');
  return terminal;
}

async function waitFor(terminal: Terminal, pattern: RegExp, what: string): Promise<RegExpExecArray> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const match = pattern.exec(terminal.output());
    if (match) return match;
    if (terminal.child.exitCode !== null) assert.fail(`sealpost exited before ${what}:\n${terminal.output()}`);
    if (Date.now() > deadline) assert.fail(`no ${what} in:\n${terminal.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stop(terminal: Terminal): Promise<void> {
  terminal.child.kill('SIGINT');
  // `script` passes the signal on as the terminal would; the process then ends itself.
  if (terminal.child.exitCode === null) await once(terminal.child, 'exit');
}

describe('the banner with JSON logs', () => {
  it('goes to stderr with the generated tokens: stdout is JSON lines only', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-logs-json-'));
    const sealpost = await startSealpostProcess({ SEALPOST_DATA_DIR: dataDir, LOG_FORMAT: 'json' });
    try {
      assert.match(sealpost.stderr(), /Sealpost is running\.[\s\S]*Generated SERVICE_TOKEN=\S+/);
      const lines = sealpost.stdout().split('\n').filter(Boolean);
      assert.ok(lines.length > 5, sealpost.stdout());
      for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `not JSON: ${line}`);
      assert.doesNotMatch(sealpost.stdout(), /Generated|Sealpost is running/);
    } finally {
      assert.equal(await sealpost.stop(), 0);
    }
  });
});

describe('logs on a terminal', () => {
  it('prints human lines: no JSON, request lines or default warnings; link and code on their own lines', async () => {
    const terminal = await startInTerminal({});
    try {
      const mail = createTransport({ host: '127.0.0.1', port: terminal.ports.smtp, secure: false, ignoreTLS: true });
      await mail.sendMail({
        from: 'alice@example.com',
        to: 'bob@example.org',
        subject: 'logs',
        text: 'hello',
        headers: { 'X-Sealpost-Mobile': 'bob@example.org=+41791234567' },
      });
      mail.close();
      const [, link, id] = await waitFor(
        terminal,
        /reader link for bob@example\.org: (http:\/\/\S+\/m\/([0-9a-f-]{36})\S*)/,
        'reader link',
      );
      assert.ok(link);

      const reader = new Reader(`http://127.0.0.1:${terminal.ports.auth}`);
      assert.equal((await reader.get(`/v1/config?messageId=${id}`)).status, 200);
      const sent = await reader.request('POST', '/v1/auth/code', {
        body: { messageId: id, email: 'bob@example.org', mobile: '+41791234567', method: 'sms' },
      });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const [codeLine] = await waitFor(
        terminal,
        /^.*SMS to \+41791234567.*Your Sealpost code is \d{6}.*$/m,
        'the SMS code',
      );

      const lines = terminal
        .output()
        .split('\n')
        .filter((line) => line.trim() !== '');
      const logLines = lines.filter((line) => /^\[\d\d:\d\d:\d\d\] [A-Z]+:/.test(line));
      assert.ok(logLines.length >= 10, terminal.output());
      for (const line of lines) {
        assert.doesNotMatch(line, /^\s*\{/, 'no JSON line on a terminal');
        assert.doesNotMatch(line, /incoming request|request completed/, 'requests are logged at debug only');
        assert.doesNotMatch(
          line,
          /WARN|Warning|Deprecation|\(node:\d+\)/,
          `a default start warns about nothing: ${line}`,
        );
      }
      assert.match(
        codeLine,
        /^\[\d\d:\d\d:\d\d\] INFO: SMS to \+41791234567 \(not sent, SMS_PROVIDER=log\): Your Sealpost code is \d{6}/,
        'the code leads its own line',
      );
      assert.match(
        terminal.output(),
        /^\[\d\d:\d\d:\d\d\] INFO: reader link for bob@example\.org: http/m,
        'the link leads its own line',
      );
      // Details follow the message as key=value on the same line, never as a JSON object that wraps.
      assert.match(
        terminal.output(),
        /^\[\d\d:\d\d:\d\d\] INFO: sealpost started services=seal,exchange,auth startupMs=\d+$/m,
      );
      for (const line of logLines) assert.doesNotMatch(line, /[{[]"|":/, `a JSON object in: ${line}`);
    } finally {
      await stop(terminal);
    }
  });

  it('prints JSON on a terminal too with LOG_FORMAT=json, and the request lines with LOG_LEVEL=debug', async () => {
    const terminal = await startInTerminal({ LOG_FORMAT: 'json', LOG_LEVEL: 'debug' });
    try {
      const health = await fetch(`http://127.0.0.1:${terminal.ports.exchange}/healthz`);
      assert.equal(health.status, 200);
      const [line] = await waitFor(terminal, /^\{.*"msg":"request completed".*$/m, 'a JSON request line');
      const entry = JSON.parse(line);
      assert.equal(entry.level, 20, 'request lines are at debug');
      assert.equal(entry.res.statusCode, 200);
    } finally {
      await stop(terminal);
    }
  });
});
