import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startClamd, type ClamdTestServer } from './support/clamd.ts';
import { refusedPort } from './support/ports.ts';
import { createTestDatabase } from './support/postgres.ts';
import { standInEnv, startStandIn, type StandIn } from './support/seal.ts';
import { SEALPOST_BIN } from './support/sealpost-process.ts';
import { startSmsCapture, type SmsCapture } from './support/sms-capture.ts';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.ts';

const run = promisify(execFile);

/** `sealpost check` with `env`; resolves with its exit code and what it printed. */
async function check(env: Record<string, string>): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [SEALPOST_BIN, 'check'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    });
    return { code: 0, out: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, out: `${failed.stdout}${failed.stderr}` };
  }
}
const line = (out: string, name: string) => out.split('\n').find((l) => l.startsWith(name)) ?? '';

describe('sealpost check', () => {
  let dir: string;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let standIn: StandIn;
  let sink: SmtpSink;
  let sms: SmsCapture;
  let clamd: ClamdTestServer;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-check-'));
    [database, standIn, sink, sms, clamd] = await Promise.all([
      createTestDatabase('check'),
      startStandIn(),
      startSmtpSink(),
      startSmsCapture(),
      startClamd(),
    ]);
  });
  after(async () => {
    await Promise.all([database?.drop(), standIn?.close(), sink?.close(), sms?.close(), clamd?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('passes every check on the embedded defaults', async () => {
    const { code, out } = await check({ SEALPOST_DATA_DIR: join(dir, 'embedded') });
    assert.equal(code, 0, out);
    assert.match(out, /all 6 checks passed/);
    assert.match(line(out, 'object store'), /ok .*probe written, read and deleted/);
  });

  it('tries each configured dependency for real and names what fails and why', async () => {
    const real = {
      SEALPOST_DATA_DIR: join(dir, 'real'),
      DATABASE_URL: database.url,
      ...standInEnv(standIn),
      OUTBOUND_SMTP_URL: sink.url,
      SMS_PROVIDER: 'http',
      SMS_PROVIDER_URL: `${sms.url}/sms`,
      ...clamd.env,
    };
    const good = await check(real);
    assert.equal(good.code, 0, good.out);
    assert.match(line(good.out, 'database'), /ok +PostgreSQL at 127\.0\.0\.1:5432\/\S+ answers/);
    assert.match(line(good.out, 'IPFS cluster'), /ok +127\.0\.0\.1:\d+ answers \/id/);
    assert.match(line(good.out, 'outbound relay'), /ok +127\.0\.0\.1:\d+ answers EHLO \(8BITMIME yes, SMTPUTF8 yes\)/);
    assert.match(line(good.out, 'SMS provider'), /ok +http provider at 127\.0\.0\.1:\d+ reachable \(nothing sent\)/);
    assert.match(line(good.out, 'clamd'), /ok +127\.0\.0\.1:\d+ answers PING/);
    assert.equal(sms.messages.length, 0, 'no SMS was sent');
    assert.equal(sink.messages.length, 0, 'no mail was sent');

    const closed = String(await refusedPort());
    const bad = await check({
      ...real,
      OUTBOUND_SMTP_URL: `smtp://127.0.0.1:${closed}`,
      SMS_PROVIDER_URL: `http://127.0.0.1:${closed}/sms`,
      CLAMD_PORT: closed,
      IPFS_CLUSTER_PORT: closed,
    });
    assert.equal(bad.code, 1, bad.out);
    assert.match(
      line(bad.out, 'outbound relay'),
      new RegExp(`FAILED +OUTBOUND_SMTP_URL smtp://127\\.0\\.0\\.1:${closed}: .*ECONNREFUSED`),
    );
    assert.match(line(bad.out, 'SMS provider'), /FAILED +SMS_PROVIDER http at 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    assert.match(line(bad.out, 'clamd'), /FAILED/);
    assert.match(line(bad.out, 'IPFS cluster'), /FAILED/);
    assert.match(line(bad.out, 'database'), /ok/);
    assert.match(bad.out, /4 of 6 checks failed/);
  });
});
