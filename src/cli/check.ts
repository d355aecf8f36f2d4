import { randomUUID } from 'node:crypto';
import { access, mkdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { constants } from 'node:fs';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { ClamdClient } from '../auth/clamd/client.ts';
import { ClusterClient } from '../seal/clusters/client.ts';
import { probeRelay } from '../exchange/outbound/relay-capabilities.ts';
import type { Config } from './config.ts';
import { openDatabase } from '../kernel/db/index.ts';
import { createObjectStore } from '../kernel/objects/index.ts';

/** How long one check may take before it counts as failed. */
const CHECK_TIMEOUT_MS = 10_000;

interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * `sealpost check`: reads the configuration and tries each dependency the way the services use it,
 * without sending anything anyone would receive: PostgreSQL, the object store (a probe object
 * written, read and deleted), the IPFS cluster's `/id` and its Kubo, the outbound relay's EHLO, the SMS
 * provider's address (a connection, no SMS), clamd's PING. Prints what works and what does not, and
 * why; exits 1 when anything does not.
 */
export async function checkCommand(config: Config, out: NodeJS.WritableStream): Promise<number> {
  const checks: Array<[string, () => Promise<string>]> = [
    ['database', () => checkDatabase(config)],
    ['object store', () => checkObjects(config)],
    ['IPFS cluster', () => checkCluster(config)],
    ['outbound relay', () => checkRelay(config)],
    ['SMS provider', () => checkSms(config)],
    ['clamd', () => checkClamd(config)],
  ];
  const results: CheckResult[] = [];
  for (const [name, run] of checks) {
    try {
      results.push({ name, ok: true, detail: await within(run(), CHECK_TIMEOUT_MS) });
    } catch (error) {
      results.push({ name, ok: false, detail: error instanceof Error ? error.message : String(error) });
    }
  }
  const width = Math.max(...results.map((r) => r.name.length));
  for (const r of results)
    out.write(`${r.name.padEnd(width)}  ${r.ok ? 'ok    ' : 'FAILED'}  ${r.detail.replace(/\s+/g, ' ')}\n`);
  const failed = results.filter((r) => !r.ok).length;
  out.write(failed ? `\n${failed} of ${results.length} checks failed\n` : `\nall ${results.length} checks passed\n`);
  return failed ? 1 : 0;
}

async function checkDatabase(config: Config): Promise<string> {
  if (!config.databaseUrl) {
    // The embedded PGlite belongs to the process that runs it: opening it beside `start all` could
    // damage it, so only its folder is checked.
    const dir = join(resolve(config.dataDir), 'pg');
    await writableFolder(dir);
    return `embedded PGlite in ${dir} (DATABASE_URL unset); folder writable`;
  }
  const database = await openDatabase({ url: config.databaseUrl, poolSize: 1 });
  try {
    await database.ping();
    const url = new URL(config.databaseUrl);
    return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname} answers`;
  } finally {
    await database.close();
  }
}

async function checkObjects(config: Config): Promise<string> {
  const objects = await createObjectStore({ s3: config.s3, dataDir: resolve(config.dataDir) });
  const key = `check/probe-${randomUUID()}`;
  const probe = Buffer.from(`sealpost check ${new Date().toISOString()}`);
  try {
    await objects.put(key, Readable.from([probe]), { contentType: 'text/plain' });
    const chunks: Buffer[] = [];
    for await (const chunk of await objects.get(key)) chunks.push(chunk as Buffer);
    if (!Buffer.concat(chunks).equals(probe))
      throw new Error('the probe object read back differs from what was written');
    await objects.delete(key);
    const store =
      objects.driver === 's3'
        ? `S3 bucket ${config.s3.bucket}`
        : `local folder ${join(resolve(config.dataDir), 'objects')}`;
    return `${store}: probe written, read and deleted`;
  } finally {
    await objects.delete(key).catch(() => {});
    await objects.close();
  }
}

async function checkCluster(config: Config): Promise<string> {
  const env = config.seal.envCluster;
  if (!env) {
    if (config.production)
      throw new Error('no IPFS cluster: set IPFS_CLUSTER_HOST (or store one through POST /v1/ipfs/config)');
    return 'embedded IPFS Cluster stand-in (IPFS_CLUSTER_HOST unset), started by `sealpost start all`';
  }
  const client = new ClusterClient({ ...env, timeout: '10s' }, { proxyPort: config.seal.ipfsProxyPort });
  const id = await client.id();
  if (id.ipfsError) throw new Error(`${client.name} answers, but its IPFS daemon does not: ${id.ipfsError}`);
  return (
    `${client.name} answers /id (peer ${id.id}), its IPFS daemon is up ` +
    "(a configuration stored through POST /v1/ipfs/config is checked by the seal service's /readyz)"
  );
}

async function checkRelay(config: Config): Promise<string> {
  const url = config.exchange.outboundSmtpUrl;
  if (!url)
    return `no relay (OUTBOUND_SMTP_URL unset): outbound mail is written to ${join(resolve(config.dataDir), 'outbox')}`;
  const parsed = new URL(url);
  try {
    const offers = await probeRelay(url, CHECK_TIMEOUT_MS, config.exchange.smtpHostname);
    const yesNo = (offered: boolean) => (offered ? 'yes' : 'no');
    return (
      `${parsed.hostname}:${parsed.port || 25} answers EHLO ` +
      `(8BITMIME ${yesNo(offers.eightBitMime)}, SMTPUTF8 ${yesNo(offers.smtpUtf8)})`
    );
  } catch (error) {
    throw new Error(
      `OUTBOUND_SMTP_URL ${parsed.protocol}//${parsed.host}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

async function checkSms(config: Config): Promise<string> {
  const { provider, url } = config.auth.sms;
  if (provider === 'log' || (provider === undefined && !config.production))
    return 'log provider: codes are printed, no SMS is sent (development only)';
  if (provider === undefined) throw new Error('SMS_PROVIDER is not set (required in production)');
  const target = new URL(provider === 'twilio' ? 'https://api.twilio.com' : url!);
  const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  await new Promise<void>((done, fail) => {
    const socket = connect(port, target.hostname);
    socket.setTimeout(CHECK_TIMEOUT_MS, () => socket.destroy(new Error('no answer')));
    socket.once('connect', () => {
      socket.destroy();
      done();
    });
    socket.once('error', (error) => fail(new Error(`SMS_PROVIDER ${provider} at ${target.host}: ${error.message}`)));
  });
  return `${provider} provider at ${target.host} reachable (nothing sent)`;
}

async function checkClamd(config: Config): Promise<string> {
  const clamd = config.auth.attachments.clamd;
  if (!clamd) return 'not configured (CLAMD_HOST unset): reply attachments are not scanned';
  await new ClamdClient({ host: clamd.host, port: clamd.port, timeoutMs: CHECK_TIMEOUT_MS }).ping();
  return `${clamd.host}:${clamd.port} answers PING`;
}

async function writableFolder(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await access(dir, constants.W_OK);
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
    }),
  ]);
}
