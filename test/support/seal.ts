import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Kysely } from 'kysely';
import {
  startIpfsClusterStandIn,
  type IpfsClusterStandIn,
  type IpfsClusterStandInOptions,
} from '../../src/devstack/ipfs-cluster/index.ts';
import { migrateSchema, openDatabase } from '../../src/kernel/db/index.ts';
import { normalizeClusters } from '../../src/seal/clusters/config.ts';
import type { ClusterConfigBody } from '../../src/seal/clusters/schemas.ts';
import { ClusterConfigStore } from '../../src/seal/clusters/store.ts';
import { singleKeyring } from '../../src/seal/crypto/environment-key.ts';
import { sealService } from '../../src/seal/service.ts';
import type { SealTables } from '../../src/seal/tables.ts';
import { createTestDatabase } from './postgres.ts';
import { startServiceForTest, type ServiceUnderTest } from './services.ts';

/** A fixed master key for tests, so stored passwords and wrapped keys stay readable across restarts. */
export const TEST_MASTER_KEY = 'aa'.repeat(32);

export interface StandIn extends IpfsClusterStandIn {
  dataDir: string;
}

/** An IPFS Cluster stand-in on free loopback ports with its blocks in a fresh temp folder. */
export async function startStandIn(options: Partial<IpfsClusterStandInOptions> = {}): Promise<StandIn> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-ipfs-'));
  const standIn = await startIpfsClusterStandIn({ port: 0, proxyPort: 0, dataDir, ...options });
  return {
    ...standIn,
    dataDir,
    close: async () => {
      await standIn.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** IPFS_CLUSTER_* variables pointing at a plain-HTTP stand-in (its proxy as IPFS_PROXY_PORT). */
/**
 * The target stand-in gets the source's blocks, as a real peer fetches them from IPFS to honour its pin. File by
 * file with mkdir -p rather than fs.cp: the target may create the same shard folder at the same moment (it is
 * serving), and fs.cp then fails with EEXIST (seen in CI).
 */
export async function replicateBlocks(from: StandIn, to: StandIn): Promise<void> {
  const source = join(from.dataDir, 'blocks');
  const target = join(to.dataDir, 'blocks');
  for (const entry of await readdir(source, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const destination = join(target, relative(source, join(entry.parentPath, entry.name)));
    await mkdir(join(destination, '..'), { recursive: true });
    await copyFile(join(entry.parentPath, entry.name), destination);
  }
}

export function standInEnv(standIn: IpfsClusterStandIn): Record<string, string> {
  return {
    IPFS_CLUSTER_HOST: '127.0.0.1',
    IPFS_CLUSTER_PORT: String(standIn.port),
    IPFS_CLUSTER_SECURE: 'false',
    IPFS_PROXY_PORT: String(standIn.proxyPort),
  };
}

/**
 * A cluster entry of the configuration API for a plain-HTTP stand-in, with its IPFS API (reads): the
 * seal service's /readyz asks it, as readers' reads go there.
 */
export function standInCluster(
  standIn: IpfsClusterStandIn,
  extra: Partial<ClusterConfigBody['clusters'][number]> = {},
) {
  return { host: '127.0.0.1', port: String(standIn.port), secure: false, ipfsApi: standIn.proxyUrl, ...extra };
}

/**
 * The seal service on a fresh database whose stored cluster configuration is `clusters` (written
 * before the start, as a POST and a restart would), so it starts with them in force.
 */
export async function startSealWithClusters(
  clusters: ClusterConfigBody['clusters'],
  env: Record<string, string> = {},
): Promise<ServiceUnderTest & { dropDatabase(): Promise<void> }> {
  const database = await createTestDatabase('seal');
  const db = await openDatabase({ url: database.url, poolSize: 2 });
  try {
    await migrateSchema(db.db, sealService.migrations);
    const store = new ClusterConfigStore(
      db.db.withSchema('seal') as Kysely<SealTables>,
      singleKeyring(Buffer.from(TEST_MASTER_KEY, 'hex')),
    );
    await store.save(normalizeClusters({ clusters }));
  } finally {
    await db.close();
  }
  const service = await startServiceForTest(sealService, {
    databaseUrl: database.url,
    env: { SEAL_MASTER_KEY: TEST_MASTER_KEY, ...env },
  });
  return {
    ...service,
    async stop() {
      await service.stop();
      await database.drop();
    },
    dropDatabase: () => database.drop(),
  };
}

/** The seal service with the IPFS_CLUSTER_* fallback pointing at `standIn`, on a fresh database. */
export async function startSealOnStandIn(
  standIn: IpfsClusterStandIn,
  env: Record<string, string> = {},
): Promise<ServiceUnderTest> {
  return startServiceForTest(sealService, {
    env: { SEAL_MASTER_KEY: TEST_MASTER_KEY, ...standInEnv(standIn), ...env },
  });
}

export interface MessageParts {
  from?: string;
  to?: string;
  cc?: string;
  subject?: string;
  mobiles?: string[];
  headers?: string[];
  body?: string | Buffer;
}

/** A raw RFC 5322 message with CRLF line ends. */
export function rawMessage(parts: MessageParts = {}): Buffer {
  const lines = [
    ...(parts.from !== undefined ? [`From: ${parts.from}`] : ['From: Alice Sender <alice@sender.example>']),
    ...(parts.to !== undefined ? (parts.to ? [`To: ${parts.to}`] : []) : ['To: Bob <bob@rcpt.example>']),
    ...(parts.cc ? [`Cc: ${parts.cc}`] : []),
    `Subject: ${parts.subject ?? 'Quarterly report'}`,
    'Message-ID: <test@sender.example>',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...(parts.mobiles ?? []).map((mobile) => `X-Sealpost-Mobile: ${mobile}`),
    ...(parts.headers ?? []),
  ];
  const body = parts.body ?? 'Hello Bob,\r\n\r\nthe figures are attached.\r\n';
  return Buffer.concat([
    Buffer.from(`${lines.join('\r\n')}\r\n\r\n`),
    Buffer.isBuffer(body) ? body : Buffer.from(body),
  ]);
}

/** POST /v1/seal as the exchange sends it. */
export async function postSeal(
  service: { url: string; serviceToken: string },
  raw: Buffer | ReadableStream<Uint8Array>,
  options: { envelopeId?: string; envelopeRecipients?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  return fetch(`${service.url}/v1/seal`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${service.serviceToken}`,
      'content-type': 'message/rfc822',
      'x-sealpost-envelope-id': options.envelopeId ?? crypto.randomUUID(),
      ...(options.envelopeRecipients !== undefined
        ? { 'x-sealpost-envelope-recipients': options.envelopeRecipients }
        : {}),
      ...options.headers,
    },
    body: raw,
    ...(raw instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
}
