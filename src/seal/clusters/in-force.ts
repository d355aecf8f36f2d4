import type { SealConfig } from '../config.ts';
import { environmentCluster, type ClusterSettings, type ConfigSource } from './config.ts';
import type { ClusterConfigStore } from './store.ts';

export interface ConfigInForce {
  source: ConfigSource;
  clusters: ClusterSettings[];
}

/** Thrown at start when neither source gives a configuration; the message says how to give one. */
export class MissingClusterConfigError extends Error {
  constructor() {
    super(
      'No IPFS cluster configuration: nothing was stored through POST /v1/ipfs/config and ' +
        'IPFS_CLUSTER_HOST is not set. Set IPFS_CLUSTER_HOST (and IPFS_CLUSTER_PORT, IPFS_CLUSTER_SECURE, ' +
        'IPFS_CLUSTER_USER/IPFS_CLUSTER_PASS as needed) to start with one cluster; once running, ' +
        'POST /v1/ipfs/config (admin token) stores a list of clusters that replaces the variables at the next start.',
    );
    this.name = 'MissingClusterConfigError';
  }
}

/**
 * docs/specification.md#configuration-in-force: the configuration stored through the endpoint wins; the
 * IPFS_CLUSTER_* variables are used only when nothing was stored; with neither the service does not start.
 * Read once, at start: it stays in force until the process restarts, even when a new one is stored meanwhile.
 */
export async function loadConfigInForce(
  store: ClusterConfigStore,
  envCluster: SealConfig['envCluster'],
): Promise<ConfigInForce> {
  const stored = await store.latest();
  if (stored) return { source: 'stored', clusters: stored.clusters };
  if (envCluster) return { source: 'environment', clusters: [environmentCluster(envCluster)] };
  throw new MissingClusterConfigError();
}
