import { Type } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import type { App } from '../../kernel/http.ts';
import { normalizeClusters, redactCluster, sameClusters } from './config.ts';
import type { ConfigInForce } from './in-force.ts';
import { ClusterConfigBodySchema, ConfigStateSchema, ConfigStoredResponseSchema } from './schemas.ts';
import type { ClusterConfigStore } from './store.ts';

export interface ClusterConfigRoutesOptions {
  store: ClusterConfigStore;
  inForce: ConfigInForce;
  adminToken: string;
}

const RESTART_NOTE =
  'Stored. Restart every instance of the seal service for it to apply: ' +
  'each instance keeps the configuration it read at start until then.';
const NO_RESTART_NOTE =
  'Stored. It equals the configuration this instance runs with; ' +
  'instances started with another one still need a restart.';

/** POST and GET /v1/ipfs/config (docs/specification.md#seal-endpoints). Admin token. */
export async function clusterConfigRoutes(app: App, options: ClusterConfigRoutesOptions) {
  const { store, inForce } = options;
  const onRequest = requireBearer(options.adminToken, 'admin');
  const common = { tags: ['IPFS cluster configuration'], security: [{ adminToken: [] }] };
  const errors = { 400: Type.Ref('ErrorObject'), 401: Type.Ref('ErrorObject') };

  app.post(
    '/v1/ipfs/config',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Store the IPFS cluster configuration',
        description:
          'Validates and stores the list of clusters (the first is the primary: ' +
          'files are added there, then pinned on all). Defaults: port "9094", secure true, ' +
          'timeout "30s". Passwords are stored encrypted with SEAL_MASTER_KEY and never shown again. ' +
          'It applies after every instance of the seal service has been restarted; until then each keeps the ' +
          'configuration it read at start. A 400 error object names the offending field, e.g. `clusters[1].timeout`.',
        body: ClusterConfigBodySchema,
        response: { 201: ConfigStoredResponseSchema, ...errors },
      },
    },
    async (request, reply) => {
      const clusters = normalizeClusters(request.body);
      const stored = await store.save(clusters);
      const restartRequired = !sameClusters(clusters, inForce.clusters);
      request.log.info(
        { clusters: clusters.map(redactCluster), restartRequired },
        'IPFS cluster configuration stored; it applies after a restart',
      );
      return reply.code(201).send({
        clusters: clusters.map(redactCluster),
        storedAt: stored.storedAt.toISOString(),
        restartRequired,
        message: restartRequired ? RESTART_NOTE : NO_RESTART_NOTE,
      });
    },
  );

  app.get(
    '/v1/ipfs/config',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'The IPFS cluster configuration in force and the stored one',
        description:
          '`inForce` is what this instance read at start (`source`: stored or environment); `stored` the newest ' +
          'configuration stored through POST. `restartRequired` is true when they differ. Passwords are redacted.',
        response: { 200: ConfigStateSchema, 401: errors[401] },
      },
    },
    async () => {
      const stored = await store.latest();
      return {
        inForce: { source: inForce.source, clusters: inForce.clusters.map(redactCluster) },
        stored: stored
          ? { clusters: stored.clusters.map(redactCluster), storedAt: stored.storedAt.toISOString() }
          : null,
        restartRequired: stored !== undefined && !sameClusters(stored.clusters, inForce.clusters),
      };
    },
  );
}
