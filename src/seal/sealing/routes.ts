import type { IncomingMessage } from 'node:http';
import type { Clock } from '../../kernel/clock.ts';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { AppError, badRequest, notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import type { Sealer } from './sealer.ts';
import {
  ContentQuery,
  RecipientLookupParams,
  RecipientLookupQuery,
  RecipientParams,
  RecipientSchema,
  RecipientSealedSchema,
  SEAL_HEADER,
  SealedParams,
  SealedViewSchema,
  SealHeadersSchema,
  SealResponseSchema,
} from '../../contracts/seal.ts';
import type { SealedStore } from './store.ts';
import { assertReadable } from './end-state.ts';
import { endFields, recipientView, sealAnswer, sealedView, sealHeader } from './views.ts';

export interface SealingRoutesOptions {
  sealer: Sealer;
  store: SealedStore;
  serviceToken: string;
  publicUrl: string;
  maxMessageSize: number;
  clock: Clock;
}

const err = Type.Ref('ErrorObject');

/** The service-to-service API (docs/specification.md#seal-endpoints): seal, metadata, verified content. */
export async function sealingRoutes(app: App, options: SealingRoutesOptions) {
  const { sealer, store, clock } = options;
  const onRequest = requireBearer(options.serviceToken, 'service');
  const common = { tags: ['sealed messages'], security: [{ serviceToken: [] }] };

  // The raw message reaches the handler as the request stream itself: Fastify buffers nothing.
  app.addContentTypeParser('message/rfc822', (_request, payload, done) => done(null, payload));

  app.post(
    '/v1/seal',
    {
      onRequest: [onRequest, requireRawMessage],
      schema: {
        ...common,
        summary: 'Seal a raw message',
        description:
          'Body: the raw RFC 5322 message, `Content-Type: message/rfc822`, streamed, ' +
          `at most SEAL_MAX_MESSAGE_SIZE (${options.maxMessageSize} bytes here; 413 above). Recipients: ` +
          'To and Cc plus X-Sealpost-Envelope-Recipients, normalised and deduplicated (case-insensitively). ' +
          'A message header `X-Sealpost-Mobile: <email>=<E.164>` (one per recipient, repeatable) gives that ' +
          'recipient the `sms` sign-in method; the others get `email`. Headers naming a non-recipient are ignored. ' +
          '`X-Sealpost-Expires` (a life such as `7d` or `72h`, or an RFC 3339 time) asks for an end date, ' +
          'held to SEAL_MAX_EXPIRY; without it SEAL_DEFAULT_EXPIRY applies (`expiresAt` in the answer). ' +
          'The message is sealed byte for byte as received (sha256 is of those bytes). It is encrypted ' +
          'with a fresh AES-256-GCM key, added through the primary cluster and pinned on every cluster. ' +
          'Each pin is followed until the cluster holds it (`pinning`, then `pinned`); one that fails is recorded ' +
          '(`pin_error`) and retried in the background; neither fails the seal. 201 for a new seal, 200 with ' +
          'the same record when the envelope id was sealed before. 400 for a message without From or recipients, ' +
          'unparseable, or with a malformed X-Sealpost-Mobile (errorCode invalid_mobile / invalid_email) ' +
          'or X-Sealpost-Expires (validation_failed; also a time already past); ' +
          '503 (or 502 when the cluster refused the request) when IPFS is unavailable: retry later.',
        headers: SealHeadersSchema,
        // Documents the body; the empty schema validates nothing (the body is the request stream itself).
        body: { content: { 'message/rfc822': { schema: { description: 'the raw RFC 5322 message, byte for byte' } } } },
        response: {
          200: SealResponseSchema,
          201: SealResponseSchema,
          400: err,
          401: err,
          413: err,
          415: err,
          502: err,
          503: err,
        },
      },
    },
    async (request, reply) => {
      const raw = request.raw;
      const length = request.headers['content-length'];
      try {
        const { created, record } = await sealer.seal({
          envelopeId: request.headers['x-sealpost-envelope-id'],
          envelopeRecipients: request.headers['x-sealpost-envelope-recipients'],
          body: raw.iterator({ destroyOnReturn: false }),
          declaredLength: length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined,
        });
        discardRest(raw);
        return reply
          .code(created ? 201 : 200)
          .header('location', `/v1/sealed/${record.message.id}`)
          .send(sealAnswer(record, options.publicUrl));
      } catch (error) {
        // Answer without reading the rest of a refused message; the connection closes after the answer.
        if (!raw.complete) {
          void reply.header('connection', 'close');
          discardRest(raw);
        }
        throw error;
      }
    },
  );

  app.get(
    '/v1/sealed/:id',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Metadata, recipients and pin state of a sealed message',
        description:
          'Also after its end: the record stays (`end` says how and when it ended; `expiresAt` its end date).',
        params: SealedParams,
        response: { 200: SealedViewSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request) => sealedView(await store.get(request.params.id), clock.now()),
  );

  app.get(
    '/v1/sealed/:id/recipients/:email',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'One recipient of a sealed message',
        description:
          'A cheap check for the auth service: whether this address may read the message and ' +
          'with which sign-in method. The address is normalised (trimmed, domain lower-cased, ' +
          'IDN as punycode) and compared case-insensitively. 404 when it is not a recipient; 410 ' +
          '(message_expired, message_withdrawn, with endedAt and contact) when the message ended or was ' +
          'withdrawn for this recipient: sign-in and open sessions end with it.',
        params: RecipientParams,
        response: { 200: RecipientSchema, 400: err, 401: err, 404: err, 410: err },
      },
    },
    async (request) => {
      const email = normalizeEmail(request.params.email);
      const found = email ? await store.recipient(request.params.id, email.toLowerCase()) : undefined;
      if (!found) throw notFound(`${request.params.email} is not a recipient of sealed message ${request.params.id}`);
      assertReadable(found.message, found.recipient, clock.now());
      return recipientView(found.recipient);
    },
  );

  app.get(
    '/v1/recipients/:email/sealed',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'The sealed messages addressed to one recipient, newest first',
        description:
          'For the auth service: the other messages a signed-in reader may open with what ' +
          'the session has proven. The address is normalised (trimmed, domain lower-cased, ' +
          "IDN as punycode) and compared case-insensitively; each entry carries that recipient's sign-in " +
          'method and mobile number for the message, its end date and end (ended messages stay listed). ' +
          "`before` and `beforeId` (the last entry's sealedAt and id) page back.",
        params: RecipientLookupParams,
        querystring: RecipientLookupQuery,
        response: { 200: RecipientSealedSchema, 400: err, 401: err },
      },
    },
    async (request) => {
      const email = normalizeEmail(request.params.email);
      if (!email) throw badRequest(`${JSON.stringify(request.params.email)} is not an email address`);
      const { limit = '50', before, beforeId } = request.query;
      const rows = await store.byRecipient(
        email.toLowerCase(),
        Number(limit),
        before ? new Date(before) : undefined,
        before ? beforeId : undefined,
      );
      const now = clock.now();
      return {
        sealed: rows.map(({ message, recipient }) => ({
          id: message.id,
          sender: message.sender,
          subject: message.subject,
          sealedAt: message.sealed_at.toISOString(),
          recipient: recipientView(recipient),
          ...endFields(message, now),
        })),
      };
    },
  );

  app.get(
    '/v1/sealed/:id/content',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'The verified plaintext of a sealed message',
        description:
          'The raw message (message/rfc822) as it was sealed. It is fetched by CID through the ' +
          'IPFS proxy of each cluster in order (the next when one fails or exceeds its timeout), ' +
          'decrypted, and its SHA-256 checked against the sealed record before a byte is sent: ' +
          'content that fails verification is never served (502 with errorCode seal_broken and the ' +
          'cid when content from a cluster failed verification and no cluster gave content that holds; ' +
          '503 when none could be read). The `X-Sealpost-SHA256` header carries the verified hash, ' +
          '`X-Sealpost-Seal` the seal it was verified against (id, cid, sha256, sealedAt, pins) as base64url ' +
          'JSON, so that a reader needs no second request; it is left out when longer than 8 KiB. ' +
          'After the message ended (from the moment its end date passes) 410 with errorCode message_expired or ' +
          'message_withdrawn, `endedAt` and `contact` (the sender); with `?recipient=` also when it was withdrawn ' +
          'for that recipient alone (404 when the address is not a recipient).',
        params: SealedParams,
        querystring: ContentQuery,
        response: { 400: err, 401: err, 404: err, 410: err, 502: err, 503: err },
      },
    },
    async (request, reply) => {
      const { recipient } = request.query;
      let recipientKey: string | undefined;
      if (recipient !== undefined) {
        const email = normalizeEmail(recipient);
        if (!email)
          throw notFound(`${JSON.stringify(recipient)} is not a recipient of sealed message ${request.params.id}`);
        recipientKey = email.toLowerCase();
      }
      const content = await sealer.readVerified(request.params.id, recipientKey);
      const seal = sealHeader(content.record);
      if (seal) void reply.header(SEAL_HEADER, seal);
      return reply
        .type('message/rfc822')
        .header('content-length', String(content.size))
        .header('x-sealpost-sha256', content.record.message.sha256)
        .header('cache-control', 'no-store')
        .send(content.body);
    },
  );
}

/** Before Fastify's own parsers (JSON, text) could consume the body: only message/rfc822 is sealed. */
async function requireRawMessage(request: FastifyRequest) {
  const media = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (media !== 'message/rfc822') {
    throw new AppError(
      'validation_failed',
      415,
      `POST /v1/seal takes the raw message as Content-Type: message/rfc822, not ${JSON.stringify(media || 'nothing')}`,
    );
  }
}

function discardRest(raw: IncomingMessage) {
  if (!raw.complete && !raw.destroyed) raw.resume();
}
