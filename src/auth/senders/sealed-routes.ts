import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  ExpiryBodySchema,
  SenderSealedListSchema,
  SenderSealedQuery,
  SenderSealedSchema,
  TrailSchema,
  WithdrawBodySchema,
} from '../../contracts/seal.ts';
import { AppError } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import type { AuthContext } from '../context.ts';
import { MESSAGE_ID_PATTERN } from '../seal/client.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';

const IdParams = Type.Object({ id: Type.String({ pattern: MESSAGE_ID_PATTERN }) });
const NOT_SIGNED_IN = 'Not signed in as a sender: request a code at POST /v1/sender/code and sign in first';

/** The address the session proved as a sender's; 401 for any other session, a recipient's included. */
function requireSender(request: FastifyRequest): string {
  const sender = request.readerSession?.row.sender;
  if (!sender) throw new AppError('unauthenticated', 401, NOT_SIGNED_IN);
  return sender;
}

/**
 * The sender's page's API (docs/specification.md#auth-endpoints-for-senders): the seal service's sender API
 * for the address the session proved, and nothing else. B answers 404 for a message another address sent, as
 * for one that does not exist, so a sender sees and steers only their own.
 */
export async function senderSealedRoutes(app: App, context: Pick<AuthContext, 'seal'>) {
  app.get(
    '/v1/sender/sealed',
    {
      schema: {
        tags: TAGS.sender,
        summary: "The signed-in sender's sealed messages, newest first",
        description:
          'Per message and recipient: notified, first and last opened, failed sign-ins, downloads, replies, ' +
          'withdrawal; the end date and the end. `before`: the last `sealedAt` of the page before; `q`: a text in ' +
          "a recipient's address or the subject. 401 unauthenticated without a sender's sign-in.",
        querystring: SenderSealedQuery,
        response: { 200: SenderSealedListSchema, ...errorResponses(400, 401, 502) },
      },
    },
    async (request) => {
      const { limit, ...query } = request.query;
      return context.seal.senderSealed(requireSender(request), {
        ...query,
        ...(limit !== undefined ? { limit: Number(limit) } : {}),
      });
    },
  );

  app.get(
    '/v1/sender/sealed/:id',
    {
      schema: {
        tags: TAGS.sender,
        summary: 'One sealed message of the signed-in sender',
        params: IdParams,
        response: { 200: SenderSealedSchema, ...errorResponses(401, 404, 502) },
      },
    },
    async (request) => context.seal.senderMessage(requireSender(request), request.params.id),
  );

  app.post(
    '/v1/sender/sealed/:id/withdraw',
    {
      schema: {
        tags: TAGS.sender,
        summary: 'Withdraw a sealed message, for everyone or for one recipient',
        description: `Answers the message as it is now. ${CSRF_NOTE}`,
        params: IdParams,
        body: WithdrawBodySchema,
        response: { 200: SenderSealedSchema, ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (request) => {
      const sender = requireSender(request);
      await context.seal.senderWithdraw(sender, request.params.id, request.body);
      request.log.info(
        { messageId: request.params.id, scope: request.body.recipient ? 'recipient' : 'all' },
        'withdrawn by its sender',
      );
      return context.seal.senderMessage(sender, request.params.id);
    },
  );

  app.put(
    '/v1/sender/sealed/:id/expiry',
    {
      schema: {
        tags: TAGS.sender,
        summary: "Change a sealed message's end date",
        description:
          'A later or earlier end date, after now and within SEAL_MAX_EXPIRY of its sealing (else 400); ' +
          `410 once it ended. Answers the message as it is now. ${CSRF_NOTE}`,
        params: IdParams,
        body: ExpiryBodySchema,
        response: { 200: SenderSealedSchema, ...errorResponses(400, 401, 403, 404, 410, 502) },
      },
    },
    async (request) => {
      const sender = requireSender(request);
      await context.seal.senderExpiry(sender, request.params.id, request.body);
      return context.seal.senderMessage(sender, request.params.id);
    },
  );

  app.get(
    '/v1/sender/sealed/:id/trail',
    {
      schema: {
        tags: TAGS.sender,
        summary: "A sealed message's trail: who was notified, signed in, read, downloaded and replied, and when",
        description: 'JSON `{id, trail}`, or with format=csv a download (columns at,event,recipient,client,detail).',
        params: IdParams,
        querystring: Type.Object(
          { format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')])) },
          { additionalProperties: false },
        ),
        response: { 200: TrailSchema, ...errorResponses(401, 404, 502) },
      },
    },
    async (request, reply) => {
      const sender = requireSender(request);
      const { id } = request.params;
      if (request.query.format !== 'csv') return context.seal.senderTrail(sender, id, 'json');
      const csv = await context.seal.senderTrail(sender, id, 'csv');
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="sealpost-trail-${id}.csv"`)
        .send(csv as unknown as never);
    },
  );
}
