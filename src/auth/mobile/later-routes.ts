import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import { clientAddress, clientKey } from '../client-ip.ts';
import { CODE_LENGTH } from '../codes/pending-codes.ts';
import { sendCode } from '../codes/send-code.ts';
import { refusedCode } from '../codes/refused-code.ts';
import { requireOpen } from '../context.ts';
import { maskMobile } from '../masking.ts';
import { MessageQuery } from '../message/query.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';
import type { MobileRoutesOptions } from './routes.ts';
import { requireMobile } from './number.ts';

const LaterMobile = Type.Object(
  { mobile: Type.String({ maxLength: 64, description: 'the number to add, international format' }) },
  { additionalProperties: false },
);
const ConfirmLater = Type.Object({ code: Type.String({ maxLength: 32 }) }, { additionalProperties: false });

/**
 * A recipient who signed in with an email code protects their later messages (docs/design.md#contacts): PUT
 * /v1/mobile/later sends a code to the number they give; POST /v1/mobile/later/verify with it tells the seal service,
 * which uses the number for the recipient's messages sealed from then on (never the one being read: its record is
 * sealed), and the address is told by email. The code follows the sign-in code's rules: a hash bound to the session,
 * the message, the address and the number, compared in constant time, CODE_MAX_ATTEMPTS tries, the send limits.
 */
export async function laterMobileRoutes(app: App, context: MobileRoutesOptions) {
  app.put(
    '/v1/mobile/later',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.signIn,
        summary: 'Add a mobile number for later messages: a code to that number',
        description:
          'Only for a recipient who signs in to this message by email (forbidden_auth_method otherwise: a number on ' +
          'record is changed with PUT /v1/mobile). invalid_mobile (400); sms_rate_limit (429). The code goes to the ' +
          `number given; POST /v1/mobile/later/verify with it adds the number. ${CSRF_NOTE}`,
        body: LaterMobile,
        response: {
          202: Type.Object({
            to: Type.String({ description: 'the number, masked' }),
            codeLength: Type.Integer(),
            expiresIn: Type.Integer(),
          }),
          ...errorResponses(400, 401, 403, 410, 429, 502),
        },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const found = await context.recipients.find(session.messageId, session.email);
      if (!found)
        throw new AppError('unauthorized_user', 403, 'This recipient is no longer on record for this message');
      if (found.recipient.method !== 'email') {
        throw new AppError(
          'forbidden_auth_method',
          403,
          'This recipient signs in by SMS already; a number on record is changed with PUT /v1/mobile',
        );
      }
      const mobile = requireMobile(request.body.mobile);
      const client = clientKey(clientAddress(request, context.trustProxyHops));
      await sendCode(
        context,
        session.row.id,
        {
          purpose: 'mobile_add',
          method: 'sms',
          messageId: session.messageId,
          email: found.recipient.email,
          destination: mobile,
        },
        { method: context.methods.sms, client, log: request.log },
      );
      request.log.info({ messageId: session.messageId, to: maskMobile(mobile) }, 'mobile number to add: code issued');
      return reply.code(202).send({
        to: maskMobile(mobile),
        codeLength: CODE_LENGTH,
        expiresIn: context.settings.codeExpiresInSeconds,
      });
    },
  );

  app.post(
    '/v1/mobile/later/verify',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.signIn,
        summary: 'Confirm the number to add with the code sent to it',
        description:
          '200: the number applies to the recipient’s later messages from this organisation (not to this one), and ' +
          'the address is told by email. expired_code, incorrect_code (with attemptsLeft), code_replaced or ' +
          'code_attempts_exceeded (401) as for ' +
          `sign-in; 502 when the seal service could not record it (request a new code). ${CSRF_NOTE}`,
        body: ConfirmLater,
        response: {
          200: Type.Object({
            mobile: Type.String({ description: 'the number added, masked' }),
            appliesTo: Type.Literal('later', { description: 'messages sealed from now on' }),
          }),
          ...errorResponses(400, 401, 403, 410, 429, 502),
        },
      },
    },
    async (request) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const now = new Date(context.clock.now());
      const checked = await context.codes.check(
        session.row.id,
        request.body.code,
        'mobile_add',
        now,
        async (_trx, target) =>
          target.messageId === session.messageId && target.email.toLowerCase() === session.email.toLowerCase()
            ? { email: target.email, mobile: target.destination }
            : undefined,
      );
      if (checked.outcome !== 'accepted') throw refusedCode(checked, context.methods.sms.wrongCode());
      if (checked.result === undefined) throw context.methods.sms.wrongCode();
      const { email, mobile } = checked.result;
      // After the code's transaction, not inside it: the seal service may share the embedded database's one
      // connection. Should it fail, the code is spent and the recipient asks for a new one (502 says so).
      await context.seal.confirmMobile(email, mobile, session.messageId).catch((error: unknown) => {
        throw new AppError(
          'upstream_failed',
          502,
          'The number could not be recorded; request a new code and try again',
          { cause: error },
        );
      });
      request.log.info(
        { messageId: session.messageId, to: maskMobile(mobile) },
        'mobile number added for later messages',
      );
      const found = await context.recipients.find(session.messageId, session.email).catch(() => undefined);
      await context.mobileNotices.tellAdded(
        { email, mobile, at: now, language: found?.recipient.language },
        request.log,
      );
      return { mobile: maskMobile(mobile), appliesTo: 'later' as const };
    },
  );
}
