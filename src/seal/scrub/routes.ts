import { Type } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import type { App } from '../../kernel/http.ts';
import type { ScrubStore } from './scrub-store.ts';

export interface ScrubRoutesOptions {
  store: ScrubStore;
  /** The names of the clusters in force: copies on clusters no longer configured are not listed. */
  clusters: string[];
  adminToken: string;
}

const CopySchema = Type.Object({
  id: Type.String({ description: 'the sealed message' }),
  cid: Type.String(),
  cluster: Type.String({ description: '`host:port` of the cluster holding the copy' }),
  state: Type.Union([Type.Literal('damaged'), Type.Literal('missing')], {
    description:
      'damaged: the copy was read and fails verification against its seal (AES-GCM or SHA-256); ' +
      "missing: the cluster's IPFS API did not give it (not held, its daemon down, or unreachable)",
  }),
  detail: Type.String({ description: 'what the check or the cluster said' }),
  repair: Type.String({ description: 'what the scrub did about it, or why the cluster cannot repair it' }),
  foundAt: Type.String({ format: 'date-time', description: 'when the scrub first found the copy so' }),
  checkedAt: Type.String({ format: 'date-time', description: 'when the scrub last read it' }),
});

/** The operator's view of the promise "every copy counts": the copies the scrub found wanting. */
export async function scrubRoutes(app: App, options: ScrubRoutesOptions) {
  const onRequest = requireBearer(options.adminToken, 'admin');
  app.get(
    '/v1/admin/copies',
    {
      onRequest,
      schema: {
        tags: ['sealed messages'],
        security: [{ adminToken: [] }],
        summary: 'Copies of sealed messages the scrub found damaged or missing',
        description:
          'Beside GET /v1/admin/unpinned (pins not held yet): the copies of running messages that the scrub ' +
          '(SEAL_SCRUB_INTERVAL) read and found damaged or missing, oldest finding first. A copy found intact at a ' +
          'later scrub leaves the list; ended messages are not listed.',
        querystring: Type.Object(
          {
            limit: Type.Optional(
              Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: 'how many to list, 1 to 999; default 100' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ copies: Type.Array(CopySchema) }, { title: 'Copies found wanting' }),
          401: Type.Ref('ErrorObject'),
        },
      },
    },
    async (request) => {
      const copies = await options.store.list(options.clusters, Number(request.query.limit ?? 100));
      return {
        copies: copies.map((copy) => ({
          id: copy.sealedId,
          cid: copy.cid,
          cluster: copy.cluster,
          state: copy.state,
          detail: copy.detail,
          repair: copy.repair,
          foundAt: copy.foundAt.toISOString(),
          checkedAt: copy.checkedAt.toISOString(),
        })),
      };
    },
  );
}
