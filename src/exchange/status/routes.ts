import { Type } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import { AppError, notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import type { StatusHistory } from './history.ts';
import { ENVELOPE_STATUSES } from '../tables.ts';

const StatusEntrySchema = Type.Object({
  status: Type.Union(
    ENVELOPE_STATUSES.map((s) => Type.Literal(s)),
    {
      description:
        'accepted → routed → delivering → delivered, or → retrying → … → failed ' +
        '(→ bounced). `accepted` and `routed` are written together when the message is stored; ' +
        'the detail of `routed` names the rule and the outbound strategies.',
    },
  ),
  detail: Type.Union([Type.String(), Type.Null()], {
    description: 'what happened: attempt number, relay reply, error, bounce id',
  }),
  at: Type.String({ format: 'date-time' }),
});

const StatusHistorySchema = Type.Object({
  id: Type.String({ format: 'uuid', description: 'envelope id, as answered when the message was accepted' }),
  statuses: Type.Array(StatusEntrySchema, { description: 'oldest first; archived entries included' }),
});

/**
 * GET /v1/messages/{id}/status: the status history of one message, also long after its payload and
 * envelope were deleted and after its history moved to the archive. Applications that submit messages
 * hold the service token; operators hold the admin token: either is accepted.
 */
export async function statusRoutes(
  app: App,
  options: { history: StatusHistory; adminToken: string; serviceToken: string },
) {
  const asService = requireBearer(options.serviceToken, 'service');
  const asAdmin = requireBearer(options.adminToken, 'admin');
  const onRequest = async (request: Parameters<typeof asService>[0]) => {
    try {
      await asService(request);
    } catch {
      try {
        await asAdmin(request);
      } catch {
        throw new AppError(
          'unauthenticated',
          401,
          'This endpoint needs the service or the admin token: Authorization: Bearer <token>',
          {
            headers: { 'www-authenticate': 'Bearer' },
          },
        );
      }
    }
  };

  app.get(
    '/v1/messages/:id/status',
    {
      onRequest,
      schema: {
        tags: ['messages'],
        summary: 'Status history of a message',
        security: [{ serviceToken: [] }, { adminToken: [] }],
        params: Type.Object({ id: Type.String({ format: 'uuid', description: 'envelope id' }) }),
        response: {
          200: StatusHistorySchema,
          400: Type.Ref('ErrorObject'),
          401: Type.Ref('ErrorObject'),
          404: Type.Ref('ErrorObject'),
        },
      },
    },
    async (request) => {
      const statuses = await options.history.read(request.params.id);
      if (statuses.length === 0) throw notFound(`No message ${request.params.id} is known`);
      return { id: request.params.id, statuses: statuses.map((s) => ({ ...s, at: s.at.toISOString() })) };
    },
  );
}
