import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startClamd, type ClamdTestServer } from './support/clamd.ts';
import { freePort, refusedPort } from './support/ports.ts';
import { createTestDatabase } from './support/postgres.ts';
import { standInEnv, startSealOnStandIn, startStandIn, type StandIn } from './support/seal.ts';
import { SEALPOST_BIN, startSealpostProcess } from './support/sealpost-process.ts';
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

  it('asks the embedded IPFS stand-in rather than assume it, and writes nothing', async () => {
    const dataDir = join(dir, 'embedded');
    const ports = { IPFS_CLUSTER_PORT: String(await freePort()), IPFS_PROXY_PORT: String(await freePort()) };
    const idle = await check({ SEALPOST_DATA_DIR: dataDir, ...ports });
    assert.equal(idle.code, 1, idle.out);
    assert.match(
      line(idle.out, 'IPFS cluster'),
      new RegExp(
        `FAILED +REST API http://127\\.0\\.0\\.1:${ports.IPFS_CLUSTER_PORT} ` +
          '\\(IPFS_CLUSTER_HOST, IPFS_CLUSTER_PORT\\): .*ECONNREFUSED.*sealpost start all',
      ),
    );
    assert.match(
      line(idle.out, 'database'),
      /ok +embedded PGlite .*not created yet; .* is writable \(nothing written\)/,
    );
    assert.match(line(idle.out, 'object store'), /ok +local folder .*\(S3_BUCKET unset\)/);
    assert.equal(existsSync(dataDir), false, 'check created no data folder');

    const running = await startSealpostProcess({ SEALPOST_DATA_DIR: dataDir, ...ports });
    try {
      const { code, out } = await check({ SEALPOST_DATA_DIR: dataDir, ...ports });
      assert.equal(code, 0, out);
      assert.match(out, /all 6 checks passed/);
      assert.match(
        line(out, 'IPFS cluster'),
        new RegExp(`ok +embedded IPFS Cluster stand-in at 127\\.0\\.0\\.1:${ports.IPFS_CLUSTER_PORT} .*answers /id`),
      );
      assert.match(line(out, 'IPFS cluster'), new RegExp(`IPFS API http://127\\.0\\.0\\.1:${ports.IPFS_PROXY_PORT}`));
      assert.match(line(out, 'database'), new RegExp(`in use by process ${running.child.pid} `));
    } finally {
      await running.stop();
    }
  });

  it('fails on a wrong IPFS_PROXY_PORT, naming it and the address it tried; so does /readyz', async () => {
    const wrong = String(await refusedPort());
    const env = {
      SEALPOST_DATA_DIR: join(dir, 'proxy'),
      DATABASE_URL: database.url,
      ...standInEnv(standIn),
      IPFS_PROXY_PORT: wrong,
    };
    const { code, out } = await check(env);
    assert.equal(code, 1, out);
    const failure = line(out, 'IPFS cluster');
    assert.match(failure, /FAILED/);
    assert.match(
      failure,
      new RegExp(`POST /api/v0/version failed: ECONNREFUSED at the IPFS API http://127\\.0\\.0\\.1:${wrong}`),
    );
    assert.match(failure, new RegExp(`IPFS_PROXY_PORT=${wrong}`));
    assert.match(out, /1 of 6 checks failed/);

    // The seal service's /readyz and service_ready say the same, where a reader would get a 502.
    const seal = await startSealOnStandIn(standIn, { IPFS_PROXY_PORT: wrong });
    try {
      const ready = await fetch(`${seal.url}/readyz`);
      assert.equal(ready.status, 503);
      const { message } = (await ready.json()) as { message: string };
      assert.match(message, new RegExp(`^Not ready: ipfsCluster .*IPFS API http://127\\.0\\.0\\.1:${wrong} `));
      assert.match(message, new RegExp(`IPFS_PROXY_PORT=${wrong}`));
      const metrics = await (await fetch(`${seal.metricsUrl}/metrics`)).text();
      assert.match(metrics, /^service_ready\{service="seal"\} 0$/m);
    } finally {
      await seal.stop();
    }
    // A wrong IPFS_PROXY_URL (the read address that wins over the port) is named as such.
    const viaUrl = await check({ ...env, IPFS_PROXY_URL: `http://127.0.0.1:${wrong}` });
    assert.equal(viaUrl.code, 1, viaUrl.out);
    assert.match(line(viaUrl.out, 'IPFS cluster'), /IPFS_PROXY_URL/);
  });

  it('names the variable and the endpoint when the SMS provider or S3 fails', async () => {
    const closed = String(await refusedPort());
    const { code, out } = await check({
      SEALPOST_DATA_DIR: join(dir, 'names'),
      DATABASE_URL: database.url,
      ...standInEnv(standIn),
      SMS_PROVIDER: 'http',
      S3_BUCKET: 'sealpost-check',
      S3_ENDPOINT: `http://127.0.0.1:${closed}`,
      S3_ACCESS_KEY_ID: 'check',
      S3_SECRET_ACCESS_KEY: 'check-secret',
    });
    assert.equal(code, 1, out);
    assert.match(line(out, 'SMS provider'), /FAILED +SMS_PROVIDER_URL is not set \(SMS_PROVIDER=http needs it\)/);
    assert.match(
      line(out, 'object store'),
      new RegExp(`FAILED +S3_BUCKET=sealpost-check at S3_ENDPOINT=http://127\\.0\\.0\\.1:${closed} \\(S3_REGION=`),
    );
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
    assert.match(
      line(bad.out, 'SMS provider'),
      /FAILED +SMS_PROVIDER http at 127\.0\.0\.1:\d+ \(SMS_PROVIDER_URL http:\/\/127\.0\.0\.1:\d+\): .*ECONNREFUSED/,
    );
    assert.match(line(bad.out, 'clamd'), /FAILED/);
    assert.match(line(bad.out, 'IPFS cluster'), /FAILED/);
    assert.match(line(bad.out, 'database'), /ok/);
    assert.match(bad.out, /4 of 6 checks failed/);
  });
});
