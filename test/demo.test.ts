import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './support/ports.ts';
import { Reader } from './support/auth-reader.ts';

const DEMO = fileURLToPath(new URL('../scripts/demo.ts', import.meta.url));

describe('npm run demo', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('seals a sample email on the embedded defaults, prints its reader link, then the code asked for', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-demo-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const ports = {
      auth: await freePort(),
      seal: await freePort(),
      exchange: await freePort(),
      smtp: await freePort(),
      proxy: await freePort(),
      ipfsCluster: await freePort(),
      metrics: await freePort(),
    };
    const child = spawn(process.execPath, ['--import', 'tsx', DEMO], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        SEALPOST_DATA_DIR: dataDir,
        AUTH_PORT: String(ports.auth),
        SEAL_PORT: String(ports.seal),
        EXCHANGE_PORT: String(ports.exchange),
        INBOUND_SMTP_PORT: String(ports.smtp),
        IPFS_PROXY_PORT: String(ports.proxy),
        IPFS_CLUSTER_PORT: String(ports.ipfsCluster),
        METRICS_PORT: String(ports.metrics),
        SEAL_URL: `http://127.0.0.1:${ports.seal}`,
        EXCHANGE_URL: `http://127.0.0.1:${ports.exchange}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    cleanups.push(async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    });
    const waitFor = async (pattern: RegExp, what: string) => {
      const deadline = Date.now() + 60_000;
      while (!pattern.test(out)) {
        assert.ok(Date.now() < deadline && child.exitCode === null, `${what} did not appear:\n${out}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return pattern.exec(out)!;
    };

    const [, link, id] = await waitFor(
      /Open (http:\/\/127\.0\.0\.1:\d+\/m\/([0-9a-f-]{36})(?:\?lang=en)?) in your browser/,
      'the reader link',
    );
    assert.equal(new URL(link!).port, String(ports.auth));
    // The banner's template link, opened as written: the demo must not announce a link it does not have.
    const template = await fetch(`http://127.0.0.1:${ports.auth}/m/{id}`, { headers: { accept: 'text/html' } });
    assert.equal(template.status, 404);

    const reader = new Reader(`http://127.0.0.1:${ports.auth}`);
    assert.equal((await reader.get(`/v1/config?messageId=${id}`)).status, 200);
    const asked = await reader.request('POST', '/v1/auth/code', {
      body: { messageId: id, email: 'reader@demo.example', mobile: '+41791234567', method: 'sms' },
    });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const [, code] = await waitFor(/SMS to \+41791234567: "[^"]*?(\d{6})[^"]*"/, 'the SMS code');
    const verified = await reader.request('POST', '/v1/auth/verify', { body: { code, rememberMe: false } });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    const message = await reader.get('/v1/message');
    assert.equal(message.status, 200);
    assert.match(JSON.stringify(message.body), /Your first sealed message/);
    assert.doesNotMatch(out, /Open undefined/);
    assert.equal(out.match(/A sealed message is waiting/g)?.length, 1, out);
  });
});
