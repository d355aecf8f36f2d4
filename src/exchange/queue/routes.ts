import { Type } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import type { App } from '../../kernel/http.ts';
import type { QueueView } from './view.ts';

const StatusSchema = Type.Union(
  ['accepted', 'routed', 'delivering', 'delivered', 'retrying', 'failed', 'bounced'].map((s) => Type.Literal(s)),
);

const QueueSchema = Type.Object(
  {
    summary: Type.Array(
      Type.Object({
        status: StatusSchema,
        count: Type.Integer(),
        oldestAgeSeconds: Type.Number({ description: 'age of the oldest envelope in this status' }),
      }),
    ),
    envelopes: Type.Array(
      Type.Object({
        id: Type.String({ format: 'uuid' }),
        status: StatusSchema,
        channel: Type.String(),
        sender: Type.String({ description: "envelope sender; '' for the null sender <>" }),
        recipients: Type.Array(Type.String()),
        size: Type.Integer(),
        attempts: Type.Integer(),
        ageSeconds: Type.Integer(),
        nextAttemptAt: Type.String({ format: 'date-time' }),
        lastError: Type.Union([Type.String(), Type.Null()], {
          description: 'why the last attempt failed (retrying ones)',
        }),
      }),
      { description: 'waiting envelopes (accepted, routed, delivering, retrying), oldest first' },
    ),
  },
  { title: 'Delivery queue' },
);

/** GET /v1/admin/queue: what `sealpost queue` prints. */
export async function queueRoutes(app: App, options: { view: QueueView; adminToken: string }) {
  app.get(
    '/v1/admin/queue',
    {
      onRequest: requireBearer(options.adminToken, 'admin'),
      schema: {
        tags: ['operations'],
        security: [{ adminToken: [] }],
        summary: 'The delivery queue, like mailq',
        querystring: Type.Object(
          {
            limit: Type.Optional(
              Type.String({ pattern: '^[1-9][0-9]{0,3}$', description: 'how many to list, 1 to 9999; default 100' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: QueueSchema, 401: Type.Ref('ErrorObject') },
      },
    },
    async (request) => ({
      summary: await options.view.summary(),
      envelopes: await options.view.waiting(Number(request.query.limit ?? 100)),
    }),
  );
}
