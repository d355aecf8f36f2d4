import { Type } from 'typebox';
import { SealedParams, TrailEventAnswerSchema, TrailEventBodySchema, TrailSchema } from '../../contracts/seal.ts';
import { requireBearer } from '../../kernel/bearer.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { badRequest, notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import type { FastifyReply } from 'fastify';
import type { SealedStore } from '../sealing/store.ts';
import type { TrailStore } from './trail-store.ts';
import { trailCsv, trailEntryView, wantsCsv } from './views.ts';

export interface TrailRoutesOptions {
  trailStore: TrailStore;
  sealedStore: SealedStore;
  adminToken: string;
  serviceToken: string;
}

const err = Type.Ref('ErrorObject');

export const TRAIL_FORMS =
  'JSON `{id, trail}` in the order written, or CSV with `Accept: text/csv` (RFC 4180, header row ' +
  "`at,event,recipient,client,detail`, `detail` as compact JSON; a cell starting with = + - @ is prefixed with ')";

/** Writes a trail as JSON or, when asked for, CSV. */
export async function sendTrail(
  reply: FastifyReply,
  accept: string | undefined,
  id: string,
  trailStore: TrailStore,
): Promise<unknown> {
  const entries = await trailStore.entries(id);
  if (wantsCsv(accept)) {
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="trail-${id}.csv"`)
      .send(trailCsv(entries));
  }
  return { id, trail: entries.map(trailEntryView) };
}

/** The trail (docs/specification.md#trail): events the other services report, and the operator's read. */
export async function trailRoutes(app: App, options: TrailRoutesOptions) {
  const { trailStore, sealedStore } = options;

  app.post(
    '/v1/sealed/:id/events',
    {
      onRequest: requireBearer(options.serviceToken, 'service'),
      schema: {
        tags: ['trail'],
        security: [{ serviceToken: [] }],
        summary: "Record an event in a sealed message's trail",
        description:
          'For the auth service (code_sent, sign_in_succeeded, sign_in_failed, opened, attachment_downloaded, ' +
          'reply_sent) and the exchange (notified). `recipient` is normalised (400 when it is not an address); ' +
          '`client` is the masked client address. 201 `{first}`: whether this is the first entry of this event ' +
          'for this recipient, decided race-free. 404 for an unknown message. Entries are never changed.',
        params: SealedParams,
        body: TrailEventBodySchema,
        response: { 201: TrailEventAnswerSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request, reply) => {
      const { recipient, ...event } = request.body;
      let email: string | undefined;
      if (recipient !== undefined) {
        email = normalizeEmail(recipient);
        if (!email) throw badRequest(`${JSON.stringify(recipient)} is not an email address`, 'invalid_email');
      }
      const recorded = await trailStore.record(request.params.id, {
        ...event,
        ...(email !== undefined ? { recipient: email } : {}),
      });
      if (!recorded) throw notFound(`No sealed message ${request.params.id}`);
      return reply.code(201).send(recorded);
    },
  );

  app.get(
    '/v1/admin/sealed/:id/trail',
    {
      onRequest: requireBearer(options.adminToken, 'admin'),
      schema: {
        tags: ['trail'],
        security: [{ adminToken: [] }],
        summary: "A sealed message's trail",
        description: `${TRAIL_FORMS}. Also after the message ended. 404 for an unknown message.`,
        params: SealedParams,
        response: { 200: TrailSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request, reply) => {
      // Throws the 404 of an unknown message; an existing one always has its `sealed` entry.
      await sealedStore.get(request.params.id);
      return sendTrail(reply, request.headers.accept, request.params.id, trailStore);
    },
  );
}
