import { Type, type Static } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import type { App } from '../../kernel/http.ts';
import { badRequest } from '../../kernel/errors.ts';
import { isValidDuration, parseDuration } from '../../kernel/duration.ts';
import type { QueueAction, QueueActions, QueueSelection } from './actions.ts';
import { SHAPE_BUCKETS, type QueueView } from './view.ts';
import { ENVELOPE_STATUSES, type EnvelopeStatus } from '../tables.ts';

const StatusSchema = Type.Union(ENVELOPE_STATUSES.map((s) => Type.Literal(s)));

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

const SelectionSchema = Type.Object(
  {
    ids: Type.Optional(
      Type.Array(Type.String({ format: 'uuid' }), { minItems: 1, maxItems: 1000, description: 'envelope ids' }),
    ),
    status: Type.Optional(
      Type.Union([Type.Literal('accepted'), Type.Literal('retrying'), Type.Literal('held')], {
        description: 'only envelopes in this status',
      }),
    ),
    sender: Type.Optional(Type.String({ maxLength: 254, description: "the envelope sender exactly; '' for <>" })),
    recipientDomain: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^[A-Za-z0-9.-]+$',
        description: 'a recipient in this domain or below it',
      }),
    ),
    olderThan: Type.Optional(Type.String({ description: 'older than this duration, e.g. `2h`' })),
    all: Type.Optional(Type.Literal(true, { description: 'every envelope the action applies to' })),
  },
  {
    additionalProperties: false,
    title: 'Queue selection',
    description:
      'which envelopes: every given field must match; at least one is required (`{"all": true}` for every ' +
      'envelope), so that an empty body never acts on the whole queue',
    examples: [
      { ids: ['0b9c7f5e-8d0a-4d7e-9a53-3f4b1c2d5e6f'] },
      { recipientDomain: 'example.com', status: 'retrying' },
    ],
  },
);

const ActionResultSchema = Type.Object(
  {
    action: Type.String(),
    count: Type.Integer({ description: 'how many envelopes the action changed' }),
    ids: Type.Array(Type.String({ format: 'uuid' })),
    skipped: Type.Array(Type.Object({ id: Type.String(), reason: Type.String() }), {
      description: 'ids given that the action left alone, with the reason',
    }),
  },
  { title: 'Queue action result' },
);

const ACTIONS: Record<QueueAction, { summary: string; description: string }> = {
  flush: {
    summary: 'Deliver deferred messages now, like postqueue -f',
    description: 'Selected `accepted` and `retrying` envelopes become due at once.',
  },
  hold: {
    summary: 'Put messages on hold, like postsuper -h',
    description:
      'Selected `accepted` and `retrying` envelopes become `held`: no worker takes one until it is released.',
  },
  release: {
    summary: 'Release held messages, like postsuper -H',
    description: 'Selected `held` envelopes go back to `accepted` (or `retrying` when tried before), due at once.',
  },
  requeue: {
    summary: 'Route messages again by the current rules, like postsuper -r',
    description:
      'Selected `accepted`, `retrying` and `held` envelopes are routed again by the rules as they are now and ' +
      'are due at once; one whose recipients now fall to different rules, or to none, is skipped.',
  },
  delete: {
    summary: 'Delete messages, like postsuper -d',
    description:
      'Selected `accepted`, `retrying` and `held` envelopes are deleted with their payload; the status history ' +
      'records `deleted`. Nothing is bounced.',
  },
};

/** GET /v1/admin/queue: what `sealpost queue` prints; its shape; the operator's actions on it. */
export async function queueRoutes(app: App, options: { view: QueueView; actions: QueueActions; adminToken: string }) {
  const onRequest = requireBearer(options.adminToken, 'admin');
  for (const [action, text] of Object.entries(ACTIONS) as Array<[QueueAction, (typeof ACTIONS)[QueueAction]]>) {
    app.post(
      `/v1/admin/queue/${action}`,
      {
        onRequest,
        schema: {
          tags: ['operations'],
          security: [{ adminToken: [] }],
          ...text,
          body: SelectionSchema,
          response: { 200: ActionResultSchema, 400: Type.Ref('ErrorObject'), 401: Type.Ref('ErrorObject') },
        },
      },
      async (request) => {
        const body = request.body as Static<typeof SelectionSchema>;
        const { olderThan, all, ...rest } = body;
        if (!all && Object.keys(body).length === 0)
          throw badRequest('select envelopes: ids, status, sender, recipientDomain or olderThan, or all: true');
        const selection: QueueSelection = { ...rest };
        if (olderThan !== undefined) {
          if (!isValidDuration(olderThan) || parseDuration(olderThan) < 0n)
            throw badRequest(`olderThan ${JSON.stringify(olderThan)} is not a duration such as 2h`);
          selection.olderThanSeconds = Number(parseDuration(olderThan) / 1_000_000_000n);
        }
        const result = await options.actions.run(action, selection);
        request.log.info({ action, count: result.ids.length }, 'queue action by an operator');
        return { action, count: result.ids.length, ...result };
      },
    );
  }
  app.get(
    '/v1/admin/queue/shape',
    {
      onRequest,
      schema: {
        tags: ['operations'],
        security: [{ adminToken: [] }],
        summary: 'The queue by domain and age, like qshape',
        description: `Waiting recipients per domain in age buckets starting at ${SHAPE_BUCKETS.join(', ')} minutes.`,
        querystring: Type.Object(
          {
            by: Type.Optional(
              Type.Union([Type.Literal('recipient'), Type.Literal('sender')], {
                description: "whose domain: the recipient's (default) or the envelope sender's",
              }),
            ),
            status: Type.Optional(StatusSchema),
            top: Type.Optional(
              Type.String({ pattern: '^[1-9][0-9]{0,3}$', description: 'how many domains; default 20' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            by: Type.String(),
            bucketsMinutes: Type.Array(Type.Integer()),
            total: Type.Object({ total: Type.Integer(), counts: Type.Array(Type.Integer()) }),
            domains: Type.Array(
              Type.Object({ domain: Type.String(), total: Type.Integer(), counts: Type.Array(Type.Integer()) }),
            ),
          }),
          400: Type.Ref('ErrorObject'),
          401: Type.Ref('ErrorObject'),
        },
      },
    },
    async (request) =>
      options.view.shape({
        by: request.query.by ?? 'recipient',
        status: request.query.status as EnvelopeStatus | undefined,
        top: Number(request.query.top ?? 20),
      }),
  );

  app.get(
    '/v1/admin/queue',
    {
      onRequest,
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
