import { Type } from 'typebox';
import type { Clock } from '../../kernel/clock.ts';
import { requireBearer } from '../../kernel/bearer.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import {
  EndedAnswerSchema,
  EndedQuerySchema,
  SealedParams,
  SealedViewSchema,
  WithdrawBodySchema,
} from '../../contracts/seal.ts';
import { endView, messageEnd } from '../sealing/end-state.ts';
import type { SealedStore } from '../sealing/store.ts';
import { sealedView } from '../sealing/views.ts';
import type { EndStore } from './end-store.ts';
import type { SealEnder } from './ender.ts';

export interface EndingRoutesOptions {
  ender: SealEnder;
  endStore: EndStore;
  sealedStore: SealedStore;
  adminToken: string;
  serviceToken: string;
  clock: Clock;
}

const err = Type.Ref('ErrorObject');

/** The end of sealed messages (docs/specification.md#end-dates): withdrawal (admin) and which have ended. */
export async function endingRoutes(app: App, options: EndingRoutesOptions) {
  const { ender, endStore, sealedStore, clock } = options;

  app.post(
    '/v1/admin/sealed/:id/withdraw',
    {
      onRequest: requireBearer(options.adminToken, 'admin'),
      schema: {
        tags: ['sealed messages'],
        security: [{ adminToken: [] }],
        summary: 'Withdraw a sealed message, for everyone or for one recipient',
        description:
          'Without `recipient`: for everyone. The end is recorded and the message key destroyed in one ' +
          'transaction, so no later request can decrypt; every cluster in force is then asked to unpin the CID ' +
          '(retried until it holds). With `recipient` (normalised and compared case-insensitively): for that ' +
          'recipient alone, whose reads and sessions answer 410 message_withdrawn; the others read on. Answers ' +
          'the record; a message that has ended already (withdrawn, or past its end date) is answered unchanged. ' +
          '404 for an unknown message or an address that is not its recipient.',
        params: SealedParams,
        body: WithdrawBodySchema,
        response: { 200: SealedViewSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { reason, recipient } = request.body;
      const record = await sealedStore.get(id);
      let recipientKey: string | undefined;
      if (recipient !== undefined) {
        const email = normalizeEmail(recipient);
        recipientKey = email?.toLowerCase();
        if (!record.recipients.some((entry) => entry.email_key === recipientKey))
          throw notFound(`${recipient} is not a recipient of sealed message ${id}`);
      }
      if (messageEnd(record.message, clock.now())) return sealedView(record, clock.now());
      const changed = await ender.withdraw(id, reason, recipientKey);
      return sealedView(changed ? await sealedStore.get(id) : record, clock.now());
    },
  );

  app.post(
    '/v1/sealed/ended',
    {
      onRequest: requireBearer(options.serviceToken, 'service'),
      schema: {
        tags: ['sealed messages'],
        security: [{ serviceToken: [] }],
        summary: 'Which of these sealed messages have ended',
        description:
          'For the auth service, which deletes the reply drafts of ended messages: of `ids` (at most 500), ' +
          'those that ended, with how and when. A message past its end date counts from that date, before ' +
          'the background pass records it. Unknown ids are left out.',
        body: EndedQuerySchema,
        response: { 200: EndedAnswerSchema, 400: err, 401: err },
      },
    },
    async (request) => {
      const now = clock.now();
      const rows = await endStore.ended([...new Set(request.body.ids)]);
      return {
        ended: rows.flatMap((row) => {
          const end = messageEnd(row, now);
          return end ? [{ id: row.id, end: endView(end) }] : [];
        }),
      };
    },
  );
}
