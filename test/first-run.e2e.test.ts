/**
 * docs/operating.md's "First run", walked as a new operator would: a fresh PostgreSQL database, a real S3
 * server, an IPFS cluster, an SMTP relay and an SMS provider; the environment file of the section with the
 * test's addresses and secrets in place of the placeholders; the section's own command lines run as
 * written (dkim-key, check, rules add, rules test) and its swaks line run by swaks against the SMTP door.
 * The recipient's notification must arrive and the message must read. A variable or command added to the
 * section without the test knowing fails here, so the section and this walk stay the same.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createS3ObjectStore } from '../src/kernel/objects/s3.ts';
import { Reader } from './support/auth-reader.ts';
import { freePort } from './support/ports.ts';
import { createTestDatabase } from './support/postgres.ts';
import { startS3Server, swiftUnavailable, uniqueBucket, type S3TestServer } from './support/s3-server.ts';
import { SEALPOST_BIN, startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmsCapture, type SmsCapture } from './support/sms-capture.ts';
import { startSmtpSink, type SinkMessage, type SmtpSink } from './support/smtp-sink.ts';

const run = promisify(execFile);

/** The "First run" section of docs/operating.md. */
async function firstRunSection(): Promise<string> {
  const doc = await readFile(new URL('../docs/operating.md', import.meta.url), 'utf8');
  const start = doc.indexOf('\n## First run\n');
  assert.ok(start >= 0, 'docs/operating.md has a "First run" section');
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end);
}

/** The section's code blocks, each as its lines with the indentation and `\` continuations undone. */
function codeBlocks(section: string): string[][] {
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) =>
    match[1]!
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean),
  );
}

/** Shell words of one command line: '…' and "…" quoting, a `#` comment ended. */
function words(line: string): string[] {
  const out: string[] = [];
  const pattern = /\s*(?:'([^']*)'|"([^"]*)"|(#.*$)|([^\s'"#]+))/gy;
  let word: string | undefined;
  for (const match of line.matchAll(pattern)) {
    if (match[3] !== undefined) break;
    const part = match[1] ?? match[2] ?? match[4] ?? '';
    word = word === undefined ? part : word + part;
    if (/\s/.test(line[match.index! + match[0].length] ?? ' ')) {
      out.push(word);
      word = undefined;
    }
  }
  if (word !== undefined) out.push(word);
  return out;
}

describe("docs/operating.md's First run, walked from a fresh database", { skip: swiftUnavailable() }, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  let section: string;
  let blocks: string[][];
  let env: Record<string, string>;
  let s3: S3TestServer;
  let sink: SmtpSink;
  let sms: SmsCapture;
  let sealpost: SealpostProcess;
  let cluster: ChildProcess;
  let dir: string;
  const ports = { auth: 0, seal: 0, exchange: 0, smtp: 0, cluster: 0, proxy: 0 };

  before(async () => {
    section = await firstRunSection();
    blocks = codeBlocks(section);
    dir = await mkdtemp(join(tmpdir(), 'sealpost-first-run-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    for (const name of Object.keys(ports) as Array<keyof typeof ports>) ports[name] = await freePort();

    // Step 1: a fresh, empty PostgreSQL database.
    const database = await createTestDatabase('firstrun');
    cleanups.push(() => database.drop());
    // Step 2: S3, a real server (Swift's s3api), and the bucket, made with the server's own tools (here the SDK).
    s3 = await startS3Server();
    cleanups.push(() => s3.stop());
    const bucket = uniqueBucket('firstrun');
    await createS3ObjectStore({ ...s3, bucket }).ensureBucket();
    // Step 3: an IPFS cluster with Basic auth (the stand-in, as a process of its own).
    const clusterPass = randomBytes(12).toString('hex');
    cluster = spawn(
      process.execPath,
      [
        SEALPOST_BIN,
        'devstack',
        'ipfs-cluster',
        '--port',
        String(ports.cluster),
        '--proxy-port',
        String(ports.proxy),
        '--data',
        join(dir, 'cluster'),
        '--user',
        'sealpost',
        '--pass',
        clusterPass,
      ],
      { stdio: 'ignore', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' } },
    );
    cleanups.push(async () => {
      if (cluster.exitCode === null) {
        cluster.kill('SIGTERM');
        await new Promise((resolve) => cluster.once('exit', resolve));
      }
    });
    // Step 4: the outbound relay; and the SMS provider.
    sink = await startSmtpSink();
    cleanups.push(() => sink.close());
    sms = await startSmsCapture();
    cleanups.push(() => sms.close());

    // Step 5: the section's environment file, the test's addresses and secrets in place of its placeholders.
    const file = blocks.find((block) => block[0] === '# /etc/sealpost/sealpost.env');
    assert.ok(file, 'the section has the environment file');
    const documented = Object.fromEntries(
      file.slice(1).map((line) => {
        const [, name, value] = /^([A-Z0-9_]+)=(.*)$/.exec(line) ?? [];
        assert.ok(name, `not a NAME=value line: ${line}`);
        return [name, words(value!)[0] ?? ''];
      }),
    );
    const secret = () => randomBytes(32).toString('hex');
    const ours: Record<string, string> = {
      DATABASE_URL: database.url,
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_REGION: s3.region,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      IPFS_CLUSTER_HOST: '127.0.0.1',
      IPFS_CLUSTER_PORT: String(ports.cluster),
      IPFS_CLUSTER_SECURE: 'false',
      IPFS_CLUSTER_PASS: clusterPass,
      IPFS_PROXY_URL: `http://127.0.0.1:${ports.proxy}`,
      OUTBOUND_SMTP_URL: sink.url,
      AUTH_PUBLIC_URL: `http://127.0.0.1:${ports.auth}`,
      ADMIN_TOKEN: secret(),
      SERVICE_TOKEN: secret(),
      AUTH_SECRET: secret(),
      SEAL_MASTER_KEY: secret(),
      SMS_PROVIDER_URL: `${sms.url}/sms`,
      SMS_PROVIDER_PASSWORD: secret(),
      DKIM_PRIVATE_KEY_FILE: join(dir, 'dkim.pem'),
    };
    for (const name of Object.keys(ours)) assert.ok(name in documented, `${name} is not in the section's file`);
    assert.equal(documented.NODE_ENV, 'production');
    env = {
      ...documented,
      ...ours,
      // Not the operator's business: free ports for this test, and a data folder out of the checkout.
      AUTH_PORT: String(ports.auth),
      SEAL_PORT: String(ports.seal),
      EXCHANGE_PORT: String(ports.exchange),
      INBOUND_SMTP_PORT: String(ports.smtp),
      SEALPOST_DATA_DIR: join(dir, 'data'),
    };
  });

  after(async () => {
    const code = await sealpost?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
    if (sealpost) assert.equal(code, 0, sealpost.stdout().slice(-2000));
  });

  /** Runs one of the section's `sealpost …` lines as written, with the environment file. */
  const sealpostLine = (line: string) => {
    const [command, ...args] = words(line);
    assert.equal(command, 'sealpost');
    return run(process.execPath, [SEALPOST_BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    });
  };
  const lines = (prefix: string) => blocks.flat().filter((line) => line.startsWith(prefix));
  /** The section's swaks line as written, run by swaks itself, its `--server` on this test's SMTP port. */
  const send = async (swaks: string) => {
    const [command, ...args] = words(swaks);
    assert.equal(command, 'swaks');
    const server = args.indexOf('--server');
    assert.equal(args[server + 1], '127.0.0.1:2525', 'the section sends to the SMTP door on its default port');
    args[server + 1] = `127.0.0.1:${ports.smtp}`;
    return run('swaks', args);
  };

  it('starts on a fresh database with the documented variables, refusing mail until the first rule', async () => {
    // Step 6: the DKIM key, written where the file says, by the section's command line.
    const [dkim] = lines('sealpost dkim-key generate');
    assert.ok(dkim, 'the section generates the DKIM key');
    const generated = await sealpostLine(dkim.replace('/etc/sealpost/dkim.pem', env.DKIM_PRIVATE_KEY_FILE!));
    assert.match(generated.stdout, /sealpost\._domainkey\.example\.org\. IN TXT "v=DKIM1; k=rsa; p=/);

    const [check] = lines('sealpost check');
    assert.ok(check, 'the section checks the dependencies before the start');
    const checked = await sealpostLine(check);
    assert.doesNotMatch(checked.stdout, /FAIL/i, checked.stdout);

    assert.ok(lines('sealpost start').length === 1, 'the section starts Sealpost');
    sealpost = await startSealpostProcess(env, { which: 'all', timeoutMs: 120_000 });

    const [swaks] = lines('swaks ');
    assert.ok(swaks, 'the section sends a first message with swaks');
    assert.match(section, /451 4\.3\.0 No delivery rule exists yet/);
    await assert.rejects(send(swaks), (error: { stdout: string }) => {
      assert.match(error.stdout, /<\*\* +451 4\.3\.0 No delivery rule exists yet/);
      return true;
    });
  });

  it('takes the first rule from `sealpost rules add`, and the rule test says where a message goes', async () => {
    const [add] = lines('sealpost rules add');
    assert.ok(add, 'the section adds the first rule');
    assert.match((await sealpostLine(add)).stdout, /Added rule "seal everything"/);
    const [test] = lines('sealpost rules test');
    assert.ok(test);
    assert.match((await sealpostLine(test)).stdout, /reader@example\.com +rule "seal everything" .* -> seal/);
  });

  it('seals the message sent through the SMTP door: the notification arrives and the message reads', async () => {
    const [swaks] = lines('swaks ');
    const args = words(swaks!);
    const to = args[args.indexOf('--to') + 1]!;
    const body = args[args.indexOf('--body') + 1]!;
    await send(swaks!);

    const isNotice = (m: SinkMessage) => m.to.includes(to) && /^X-Sealpost-Sealed-Id:/im.test(m.raw.toString());
    await sink.waitUntil(() => sink.messages.some(isNotice), 60_000, 'the notification');
    const notice = sink.messages.find(isNotice)!;
    assert.match(notice.raw.toString(), /^DKIM-Signature: .*d=example\.org;/m, 'signed with the generated key');
    assert.match(notice.raw.toString(), /^From: Example Org <no-reply@example\.org>/m);
    const link = new RegExp(`${env.AUTH_PUBLIC_URL!.replace(/[.:/]/g, '\\$&')}/m/([0-9a-f-]{36})`);
    const messageId = link.exec(notice.raw.toString().replace(/=\r\n/g, ''))?.[1];
    assert.ok(messageId, 'the notification links to AUTH_PUBLIC_URL/m/{id}');

    // The pin is named after the sealed message, for `ipfs-cluster-ctl pin ls` / `status`.
    const pins = await fetch(`http://127.0.0.1:${ports.cluster}/allocations`, {
      headers: { authorization: `Basic ${Buffer.from(`sealpost:${env.IPFS_CLUSTER_PASS}`).toString('base64')}` },
    });
    assert.match(await pins.text(), new RegExp(`"name":"sealpost:${messageId}"`));

    const reader = new Reader(env.AUTH_PUBLIC_URL!);
    assert.equal((await reader.get(`/v1/config?messageId=${messageId}`)).status, 200);
    const before = sink.messages.length;
    const asked = await reader.request('POST', '/v1/auth/code', { body: { messageId, email: to, method: 'email' } });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const isCode = (m: SinkMessage) => sink.messages.indexOf(m) >= before && m.raw.includes('Your Sealpost code is');
    await sink.waitUntil(() => sink.messages.some(isCode), 30_000, 'the code email');
    const code = /Your Sealpost code is (\d+)/.exec(sink.messages.find(isCode)!.raw.toString())![1]!;
    assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
    const message = await reader.get('/v1/message');
    assert.equal(message.status, 200);
    assert.match(JSON.stringify(message.body), new RegExp(body));
  });
});
