import type { Kysely } from 'kysely';
import type { Keyring } from '../crypto/keyring.ts';
import { CLUSTER_PASS_LABEL } from '../crypto/secret-box.ts';
import type { SealTables, StoredCluster } from '../tables.ts';
import type { ClusterSettings } from './config.ts';

export interface StoredConfig {
  clusters: ClusterSettings[];
  storedAt: Date;
}

/**
 * Cluster configurations stored through POST /v1/ipfs/config. Each POST adds a row (the history shows
 * who changed what when, in the log); the newest row is the stored configuration. Passwords are
 * wrapped by the current master key version: a database dump does not give the clusters away.
 */
export class ClusterConfigStore {
  constructor(
    private readonly db: Kysely<SealTables>,
    private readonly keyring: Keyring,
  ) {}

  async save(clusters: ClusterSettings[]): Promise<StoredConfig> {
    const row = await this.db
      .insertInto('cluster_configs')
      .values({ clusters: JSON.stringify(clusters.map((cluster) => this.toStored(cluster))) })
      .returning(['created_at'])
      .executeTakeFirstOrThrow();
    return { clusters, storedAt: row.created_at };
  }

  /** The newest stored configuration, passwords decrypted; undefined when none was stored. */
  async latest(): Promise<StoredConfig | undefined> {
    const row = await this.db
      .selectFrom('cluster_configs')
      .select(['clusters', 'created_at'])
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!row) return undefined;
    return { clusters: row.clusters.map((cluster) => this.fromStored(cluster)), storedAt: row.created_at };
  }

  private toStored(cluster: ClusterSettings): StoredCluster {
    const { pass, ...rest } = cluster;
    return pass === undefined
      ? rest
      : { ...rest, passEncrypted: this.keyring.wrap(Buffer.from(pass, 'utf8'), CLUSTER_PASS_LABEL) };
  }

  private fromStored(stored: StoredCluster): ClusterSettings {
    const { passEncrypted, ...rest } = stored;
    if (passEncrypted === undefined) return rest as ClusterSettings;
    let pass: string;
    try {
      pass = this.keyring.unwrap(passEncrypted, CLUSTER_PASS_LABEL).toString('utf8');
    } catch (error) {
      throw new Error(
        `The stored password of IPFS cluster ${stored.host}:${stored.port} does not decrypt: ` +
          `${(error as Error).message}. Start with the key version it was stored under, ` +
          'or store the configuration again.',
        { cause: error },
      );
    }
    // Key order as normalizeClusters writes it, so that stored and in-force configurations compare equal.
    const { host, port, user, secure, timeout, addParams, pinParams, ipfsApi } = rest as ClusterSettings;
    return {
      host,
      port,
      ...(user !== undefined ? { user, pass } : {}),
      secure,
      timeout,
      ...(addParams ? { addParams } : {}),
      ...(pinParams ? { pinParams } : {}),
      ...(ipfsApi ? { ipfsApi } : {}),
    };
  }
}
