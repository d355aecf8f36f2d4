import { Type } from 'typebox';
import type { Clock } from '../../kernel/clock.ts';
import { requireBearer } from '../../kernel/bearer.ts';
import type { App } from '../../kernel/http.ts';
import { OpenSealsSchema } from '../../contracts/seal.ts';
import type { SealedStore } from './store.ts';
import { pinView } from './views.ts';

export interface PinsRoutesOptions {
  store: SealedStore;
  adminToken: string;
  /** SEAL_PIN_DEADLINE in milliseconds: a seal older than this and not pinned everywhere is overdue. */
  deadlineMs: number;
  clock: Clock;
}

/** The operator's view of the promise "pinned on every cluster": what is not kept yet. */
export async function pinsRoutes(app: App, options: PinsRoutesOptions) {
  const onRequest = requireBearer(options.adminToken, 'admin');
  app.get(
    '/v1/admin/unpinned',
    {
      onRequest,
      schema: {
        tags: ['sealed messages'],
        security: [{ adminToken: [] }],
        summary: 'Sealed messages not pinned on every cluster',
        description:
          'Oldest first: each seal with a pin that is `pinning` (the cluster accepted it, ' +
          'IPFS has not pinned it yet) or `pin_error` (refused, unreachable or failed in IPFS; ' +
          'retried with backoff). `overdue`: still so SEAL_PIN_DEADLINE after sealing.',
        querystring: Type.Object(
          {
            limit: Type.Optional(
              Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: 'how many to list, 1 to 999; default 100' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: OpenSealsSchema, 401: Type.Ref('ErrorObject') },
      },
    },
    async (request) => {
      const seals = await options.store.openSeals(Number(request.query.limit ?? 100));
      const cutoff = options.clock.now() - options.deadlineMs;
      return {
        seals: seals.map(({ message, pins }) => ({
          id: message.id,
          cid: message.cid,
          sealedAt: message.sealed_at.toISOString(),
          overdue: message.sealed_at.getTime() < cutoff,
          pins: pins.map(pinView),
        })),
      };
    },
  );
}
