import { Type } from 'typebox';
import {
  ExpiryBodySchema,
  SenderParams,
  SenderSealedListSchema,
  SenderSealedParams,
  SenderSealedQuery,
  SenderSealedSchema,
  TrailSchema,
  WithdrawBodySchema,
} from '../../contracts/seal.ts';
import { requireBearer } from '../../kernel/bearer.ts';
import type { Clock } from '../../kernel/clock.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { badRequest, notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import type { EndStore } from '../ending/end-store.ts';
import type { SealEnder } from '../ending/ender.ts';
import { endedError, messageEnd } from '../sealing/end-state.ts';
import { sendTrail, TRAIL_FORMS } from '../trail/routes.ts';
import type { TrailStore } from '../trail/trail-store.ts';
import type { SenderMessage, SenderStore } from './sender-store.ts';
import { senderEntries } from './views.ts';

export interface SenderRoutesOptions {
  senderStore: SenderStore;
  trailStore: TrailStore;
  endStore: EndStore;
  ender: SealEnder;
  serviceToken: string;
  /** SEAL_MAX_EXPIRY: the latest end date is this long after sealing; undefined: no cap. */
  maxExpiryMs: number | undefined;
  clock: Clock;
}

const err = Type.Ref('ErrorObject');

/**
 * The sender's side (docs/specification.md#seal-endpoints-for-the-senders-side), for the auth service, which
 * passes the address the sender proved. A message another address sent answers 404, as a missing one: the
 * answer tells nothing of messages that are not the sender's.
 */
export async function senderRoutes(app: App, options: SenderRoutesOptions) {
  const { senderStore, trailStore, endStore, ender, clock } = options;
  const onRequest = requireBearer(options.serviceToken, 'service');
  const schemaCommon = { tags: ['senders'], security: [{ serviceToken: [] }] };

  /** The sender's message, or the 404 of a missing one. */
  async function own(sender: string, id: string): Promise<{ senderKey: string; message: SenderMessage }> {
    const senderKey = normalizeEmail(sender)?.toLowerCase();
    const message = senderKey ? await senderStore.message(senderKey, id) : undefined;
    if (!senderKey || !message) throw notFound(`No sealed message ${id} of ${sender}`);
    return { senderKey, message };
  }

  async function entry(message: SenderMessage) {
    const [one] = senderEntries([message], await senderStore.recipients([message.id]), clock.now());
    return one!;
  }

  app.get(
    '/v1/senders/:sender/sealed',
    {
      onRequest,
      schema: {
        ...schemaCommon,
        summary: "A sender's sealed messages, newest first",
        description:
          "`{sender}` is normalised and compared case-insensitively with each message's sender. `limit` 1 to 200 " +
          "(default 50); `before`: the last entry's sealedAt (the next page); `q`: only messages with this text in a " +
          "recipient's address or the subject, case-insensitive. Each recipient's times and counts come from the " +
          'trail.',
        params: SenderParams,
        querystring: SenderSealedQuery,
        response: { 200: SenderSealedListSchema, 400: err, 401: err },
      },
    },
    async (request) => {
      const senderKey = normalizeEmail(request.params.sender)?.toLowerCase();
      if (!senderKey) throw badRequest(`${JSON.stringify(request.params.sender)} is not an email address`);
      const { limit = '50', before, q } = request.query;
      const messages = await senderStore.list(senderKey, {
        limit: Number(limit),
        ...(before ? { before: new Date(before) } : {}),
        ...(q !== undefined ? { q } : {}),
      });
      const recipients = await senderStore.recipients(messages.map((message) => message.id));
      return { sealed: senderEntries(messages, recipients, clock.now()) };
    },
  );

  app.get(
    '/v1/senders/:sender/sealed/:id',
    {
      onRequest,
      schema: {
        ...schemaCommon,
        summary: "One of a sender's sealed messages",
        description: '404 when there is no such message or another address sent it.',
        params: SenderSealedParams,
        response: { 200: SenderSealedSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request) => entry((await own(request.params.sender, request.params.id)).message),
  );

  app.post(
    '/v1/senders/:sender/sealed/:id/withdraw',
    {
      onRequest,
      schema: {
        ...schemaCommon,
        summary: "Withdraw one of a sender's sealed messages, for everyone or for one recipient",
        description:
          'As the admin withdrawal (POST /v1/admin/sealed/{id}/withdraw): without `recipient` the key is destroyed ' +
          'and the content unpinned; with it only that recipient loses access. The trail gets `withdrawn`. Answers ' +
          "the entry; a message that has ended already is answered unchanged. 404 when it is not the sender's, or " +
          'the address is not its recipient.',
        params: SenderSealedParams,
        body: WithdrawBodySchema,
        response: { 200: SenderSealedSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request) => {
      const { message } = await own(request.params.sender, request.params.id);
      const { reason, recipient } = request.body;
      let recipientKey: string | undefined;
      if (recipient !== undefined) {
        recipientKey = normalizeEmail(recipient)?.toLowerCase();
        const recipients = await senderStore.recipients([message.id]);
        if (!recipients.some((entry) => entry.email.toLowerCase() === recipientKey))
          throw notFound(`${recipient} is not a recipient of sealed message ${message.id}`);
      }
      if (!messageEnd(message, clock.now())) await ender.withdraw(message.id, reason, recipientKey);
      return entry((await own(request.params.sender, message.id)).message);
    },
  );

  app.put(
    '/v1/senders/:sender/sealed/:id/expiry',
    {
      onRequest,
      schema: {
        ...schemaCommon,
        summary: "A new end date for one of a sender's sealed messages",
        description:
          'Later or earlier: after now and at most SEAL_MAX_EXPIRY after sealedAt (else 400; to end it now, ' +
          'withdraw it). 410 (message_expired, message_withdrawn) once it has ended. The trail gets ' +
          '`end_date_changed`. Answers the entry.',
        params: SenderSealedParams,
        body: ExpiryBodySchema,
        response: { 200: SenderSealedSchema, 400: err, 401: err, 404: err, 410: err },
      },
    },
    async (request) => {
      const { message } = await own(request.params.sender, request.params.id);
      const now = clock.now();
      const end = messageEnd(message, now);
      if (end) throw endedError(message, end);
      const expiresAt = new Date(request.body.expiresAt);
      if (!(expiresAt.getTime() > now))
        throw badRequest(`expiresAt ${request.body.expiresAt} is not after now; to end the message now, withdraw it`);
      const { maxExpiryMs } = options;
      if (maxExpiryMs !== undefined && expiresAt.getTime() > message.sealed_at.getTime() + maxExpiryMs) {
        const latest = new Date(message.sealed_at.getTime() + maxExpiryMs).toISOString();
        throw badRequest(`expiresAt ${request.body.expiresAt} is past SEAL_MAX_EXPIRY after sealing (${latest})`);
      }
      if (!(await endStore.changeEndDate(message.id, expiresAt))) {
        // It ended in between (a withdrawal, or its end date passed).
        const ended = (await own(request.params.sender, message.id)).message;
        throw endedError(ended, messageEnd(ended, clock.now()) ?? { reason: 'expired', at: new Date(now) });
      }
      return entry((await own(request.params.sender, message.id)).message);
    },
  );

  app.get(
    '/v1/senders/:sender/sealed/:id/trail',
    {
      onRequest,
      schema: {
        ...schemaCommon,
        summary: "The trail of one of a sender's sealed messages",
        description: `${TRAIL_FORMS}. 404 when there is no such message or another address sent it.`,
        params: SenderSealedParams,
        response: { 200: TrailSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request, reply) => {
      const { message } = await own(request.params.sender, request.params.id);
      return sendTrail(reply, request.headers.accept, message.id, trailStore);
    },
  );
}
