import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import { clientAddress, clientKey } from '../client-ip.ts';
import { CODE_LENGTH } from '../codes/pending-codes.ts';
import { requireSignedIn, type AuthContext } from '../context.ts';
import { MessageQuery } from './message-query.ts';
import { maskMobile } from '../masking.ts';
import { normalizeMobile } from '../mobile.ts';
import { CSRF_NOTE, TAGS, errorResponses } from './errors.ts';

const NewMobile = Type.Object(
  { mobile: Type.String({ maxLength: 64, description: 'the new number, international format' }) },
  { additionalProperties: false },
);
const ConfirmMobile = Type.Object({ code: Type.String({ maxLength: 32 }) }, { additionalProperties: false });

/**
 * Changing the recipient's mobile number, in two steps: PUT /v1/mobile sends a code to the new number,
 * POST /v1/mobile/verify with that code makes the change. The seal service's record is immutable, so
 * the confirmed number is kept here (mobile_overrides, per message and recipient) and wins over it for
 * every later SMS sign-in to that message.
 */
export async function mobileRoutes(app: App, context: AuthContext) {
  app.put(
    '/v1/mobile',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.signIn,
        summary: "Change the signed-in recipient's mobile number: sends a code to the new number",
        description:
          'Only for recipients who sign in by SMS (forbidden_auth_method otherwise). invalid_mobile (400); ' +
          'new_mobile_conflict (409) when it is the current number; sms_rate_limit (429). Confirm with POST /v1/mobile/verify. ' +
          CSRF_NOTE,
        body: NewMobile,
        response: { 202: Type.Object({ codeLength: Type.Integer(), expiresIn: Type.Integer() }), ...errorResponses(400, 401, 403, 409, 429, 502) },
      },
    },
    async (request, reply) => {
      const session = await requireSignedIn(request, context.access, request.query.messageId);
      const found = await context.recipients.find(session.messageId, session.email);
      if (!found) throw new AppError('unauthorized_user', 403, 'This recipient is no longer on record for this message');
      if (found.recipient.method !== 'sms') {
        throw new AppError('forbidden_auth_method', 403, 'This recipient signs in by email; there is no mobile number to change');
      }
      const mobile = normalizeMobile(request.body.mobile);
      if (!mobile) throw new AppError('invalid_mobile', 400, 'This is not a valid mobile number in international format (+41 79 123 45 67)');
      if (mobile === found.recipient.mobile) throw new AppError('new_mobile_conflict', 409, 'The new mobile number is the current one');

      const sms = context.methods.sms;
      const client = clientKey(clientAddress(request, context.trustProxyHops));
      const reservation = await context.limiter.reserve(sms.limitKey(mobile), client, new Date());
      const code = context.codes.newCode();
      try {
        await sms.send(mobile, code, request.log);
      } catch (error) {
        await reservation.release();
        throw error;
      }
      await context.codes.store(
        session.row.id,
        { purpose: 'mobile_change', method: 'sms', messageId: session.messageId, email: found.recipient.email, destination: mobile },
        code,
        new Date(),
      );
      request.log.info({ messageId: session.messageId, to: maskMobile(mobile) }, 'mobile change code issued');
      return reply.code(202).send({ codeLength: CODE_LENGTH, expiresIn: context.settings.codeExpiresInSeconds });
    },
  );

  app.post(
    '/v1/mobile/verify',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.signIn,
        summary: 'Confirm the new mobile number with the code sent to it',
        description: `expired_code, incorrect_code or code_attempts_exceeded (401) as for sign-in, with the same limit of wrong tries. ${CSRF_NOTE}`,
        body: ConfirmMobile,
        response: { 200: Type.Object({ mobile: Type.String() }), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const session = await requireSignedIn(request, context.access, request.query.messageId);
      const now = new Date();
      const checked = await context.codes.check(session.row.id, request.body.code, 'mobile_change', now, async (trx, target) => {
        // The code was issued for this session's recipient; the session cannot have changed recipient since
        // without its code being replaced, but the check costs nothing.
        if (target.messageId !== session.messageId || target.email !== session.email) return undefined;
        await context.recipients.setMobile(trx, target.messageId, target.email, target.destination, now);
        return target.destination;
      });
      if (checked.outcome === 'expired') throw new AppError('expired_code', 401, 'The code has expired; request a new one');
      if (checked.outcome === 'voided') throw new AppError('code_attempts_exceeded', 401, 'Too many wrong tries: this code can no longer be used; request a new one');
      if (checked.outcome === 'incorrect' || checked.result === undefined) throw context.methods.sms.wrongCode();
      request.log.info({ messageId: session.messageId, to: maskMobile(checked.result) }, 'mobile number changed');
      return { mobile: checked.result };
    },
  );
}
