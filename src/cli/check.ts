import { randomUUID } from 'node:crypto';
import { access } from 'node:fs/promises';
import { connect } from 'node:net';
import { constants } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { ClamdClient } from '../auth/clamd/client.ts';
import { ClusterClient } from '../seal/clusters/client.ts';
import { probeRelay } from '../exchange/outbound/relay-capabilities.ts';
import type { Config } from './config.ts';
import { dataFolderHolder } from '../kernel/data-lock.ts';
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
 * without sending anything anyone would receive and without writing anything here: PostgreSQL (the
 * embedded PGlite's folder only), the object store (on S3 a probe object written, read and deleted; the
 * local folder only looked at), the IPFS cluster's `/id` and its Kubo and the IPFS API readers are served
 * through (the embedded stand-in is asked, not assumed), the outbound relay's EHLO, the SMS provider's
 * address (a connection, no SMS), clamd's PING. Prints what works and what does not, naming the variable
 * and the endpoint of each failure; exits 1 when anything does not.
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
    // damage it, so only its folder is looked at (and nothing created: check writes nothing).
    const dir = join(resolve(config.dataDir), 'pg');
    const holder = await dataFolderHolder(config.dataDir);
    const state = holder
      ? `in use by process ${holder.pid} on ${holder.host} (${holder.command})`
      : await folderState(dir, `SEALPOST_DATA_DIR=${config.dataDir}`);
    return `embedded PGlite in ${dir} (DATABASE_URL unset): ${state}`;
  }
  const url = new URL(config.databaseUrl);
  const where = `DATABASE_URL postgres://${url.host}${url.pathname}`;
  const database = await openDatabase({ url: config.databaseUrl, poolSize: 1 });
  try {
    await database.ping().catch((error: unknown) => {
      throw new Error(`${where}: ${error instanceof Error ? error.message : String(error)}`);
    });
    return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname} answers`;
  } finally {
    await database.close();
  }
}

async function checkObjects(config: Config): Promise<string> {
  if (!config.s3.bucket) {
    // The local driver creates its folder on first use: check leaves that to `start`.
    const dir = join(resolve(config.dataDir), 'objects');
    return `local folder ${dir} (S3_BUCKET unset): ${await folderState(dir, `SEALPOST_DATA_DIR=${config.dataDir}`)}`;
  }
  const where =
    `S3_BUCKET=${config.s3.bucket} at S3_ENDPOINT=${config.s3.endpoint ?? '(unset: AWS)'} ` +
    `(S3_REGION=${config.s3.region})`;
  const objects = await createObjectStore({ s3: config.s3, dataDir: resolve(config.dataDir) });
  const key = `check/probe-${randomUUID()}`;
  const probe = Buffer.from(`sealpost check ${new Date().toISOString()}`);
  try {
    // A probe object written, read and deleted: the services write there, so writing is what is checked;
    // nothing is left behind.
    await objects.put(key, Readable.from([probe]), { contentType: 'text/plain' });
    const chunks: Buffer[] = [];
    for await (const chunk of await objects.get(key)) chunks.push(chunk as Buffer);
    if (!Buffer.concat(chunks).equals(probe))
      throw new Error('the probe object read back differs from what was written');
    await objects.delete(key);
    return `${where}: probe written, read and deleted`;
  } catch (error) {
    throw new Error(`${where}: ${describe(error)}`);
  } finally {
    await objects.delete(key).catch(() => {});
    await objects.close();
  }
}

async function checkCluster(config: Config): Promise<string> {
  const env = config.seal.envCluster;
  if (!env && config.production)
    throw new Error('no IPFS cluster: set IPFS_CLUSTER_HOST (or store one through POST /v1/ipfs/config)');
  // Without IPFS_CLUSTER_HOST, `sealpost start all` runs the stand-in on these two ports: ask it too.
  const cluster = env ?? { host: '127.0.0.1', port: String(config.seal.clusterPort), secure: false };
  const client = new ClusterClient({ ...cluster, timeout: '10s' }, { proxyPort: config.seal.ipfsProxyPort });
  const rest = `REST API ${cluster.secure ? 'https' : 'http'}://${client.name} (IPFS_CLUSTER_HOST, IPFS_CLUSTER_PORT)`;
  const what = env ? `${client.name}` : `embedded IPFS Cluster stand-in at ${client.name} (IPFS_CLUSTER_HOST unset)`;
  const standInHint = env ? '' : '; the stand-in runs inside `sealpost start all`: is it running on these ports?';
  let id: Awaited<ReturnType<ClusterClient['id']>>;
  try {
    id = await client.id();
  } catch (error) {
    throw new Error(`${rest}: ${describe(error)}${standInHint}`);
  }
  if (id.ipfsError) throw new Error(`${what} answers, but its IPFS daemon does not: ${id.ipfsError}`);
  // The read path: readers' messages come through the IPFS API, not the REST API.
  try {
    await client.ipfsVersion();
  } catch (error) {
    throw new Error(`${describe(error)}${standInHint}`);
  }
  return (
    `${what} answers /id (peer ${id.id}), its IPFS daemon is up, and reads reach the ${client.ipfsApiSource} ` +
    "(a configuration stored through POST /v1/ipfs/config is checked by the seal service's /readyz)"
  );
}

async function checkRelay(config: Config): Promise<string> {
  const url = config.exchange.outboundSmtpUrl;
  if (!url)
    return (
      `no relay (OUTBOUND_SMTP_URL unset${config.production ? ', OUTBOUND_OUTBOX=true' : ''}): ` +
      `outbound mail is written to ${join(resolve(config.dataDir), 'outbox')} and reaches no one`
    );
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
  if (provider !== 'twilio' && !url) throw new Error(`SMS_PROVIDER_URL is not set (SMS_PROVIDER=${provider} needs it)`);
  const target = new URL(provider === 'twilio' ? 'https://api.twilio.com' : url!);
  const variable = provider === 'twilio' ? 'SMS_PROVIDER twilio' : `SMS_PROVIDER_URL ${target.origin}`;
  const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  await new Promise<void>((done, fail) => {
    const socket = connect(port, target.hostname);
    socket.setTimeout(CHECK_TIMEOUT_MS, () => socket.destroy(new Error('no answer')));
    socket.once('connect', () => {
      socket.destroy();
      done();
    });
    socket.once('error', (error) =>
      fail(new Error(`SMS_PROVIDER ${provider} at ${target.host} (${variable}): ${error.message}`)),
    );
  });
  return `${provider} provider at ${target.host} reachable (nothing sent)`;
}

async function checkClamd(config: Config): Promise<string> {
  const clamd = config.auth.attachments.clamd;
  if (!clamd) return 'not configured (CLAMD_HOST unset): reply attachments are not scanned';
  await new ClamdClient({ host: clamd.host, port: clamd.port, timeoutMs: CHECK_TIMEOUT_MS }).ping();
  return `${clamd.host}:${clamd.port} answers PING`;
}

/**
 * Whether `start` can use `dir`, found without writing: the folder if it exists, else the nearest folder
 * above it that does (where `start` would create it). The variable that moves it is named on failure.
 */
async function folderState(dir: string, setting: string): Promise<string> {
  let existing = dir;
  for (;;) {
    try {
      await access(existing, constants.F_OK);
      break;
    } catch {
      const parent = dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
  }
  try {
    await access(existing, constants.W_OK);
  } catch {
    throw new Error(`${existing} is not writable (${setting})`);
  }
  return existing === dir ? 'folder writable' : `not created yet; ${existing} is writable (nothing written)`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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
