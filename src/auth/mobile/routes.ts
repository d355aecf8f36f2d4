import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import { clientAddress, clientKey } from '../client-ip.ts';
import { CODE_LENGTH } from '../codes/pending-codes.ts';
import { sendCode } from '../codes/send-code.ts';
import { refusedCode } from '../codes/refused-code.ts';
import { requireOpen, type AuthContext, type SignedInSession } from '../context.ts';
import { MessageQuery } from '../message/query.ts';
import { maskMobile } from '../masking.ts';
import { requireMobile } from './number.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';

const NewMobile = Type.Object(
  { mobile: Type.String({ maxLength: 64, description: 'the new number, international format' }) },
  { additionalProperties: false },
);
const ConfirmMobile = Type.Object({ code: Type.String({ maxLength: 32 }) }, { additionalProperties: false });

const CodeStep = Type.Object({
  step: Type.Union([Type.Literal('current'), Type.Literal('new')], {
    description: 'which number the code just sent went to',
  }),
  to: Type.String({ description: 'that number, masked' }),
  codeLength: Type.Integer(),
  expiresIn: Type.Integer(),
});

/**
 * Changing the recipient's mobile number, so that a session alone (a remember-me cookie on a shared
 * computer) cannot take the number over: PUT /v1/mobile sends a code to the *current* number; POST
 * /v1/mobile/verify with it sends a code to the new number; POST /v1/mobile/verify with that one makes the
 * change, and the old number (SMS) and the address (email) are told. The seal service's record is
 * immutable, so the confirmed number is kept here (mobile_overrides, per message and recipient) and wins
 * over it for every later SMS sign-in to that message; the seal service is told too, and uses it for the
 * recipient's later messages.
 */
export type MobileRoutesOptions = Pick<
  AuthContext,
  | 'clock'
  | 'access'
  | 'seal'
  | 'endedDrafts'
  | 'recipients'
  | 'methods'
  | 'trustProxyHops'
  | 'sendLimit'
  | 'codes'
  | 'sessions'
  | 'settings'
  | 'mobileNotices'
>;

export async function mobileRoutes(app: App, context: MobileRoutesOptions) {
  /** Sends a code of this step to `to` under the send limits, and makes it the session's pending code. */
  async function sendStepCode(
    request: FastifyRequest,
    session: SignedInSession,
    step: 'current' | 'new',
    to: string,
    email: string,
  ): Promise<Static<typeof CodeStep>> {
    const client = clientKey(clientAddress(request, context.trustProxyHops));
    const purpose = step === 'current' ? 'mobile_current' : 'mobile_change';
    await sendCode(
      context,
      session.row.id,
      { purpose, method: 'sms', messageId: session.messageId, email, destination: to },
      { method: context.methods.sms, client, log: request.log },
    );
    request.log.info({ messageId: session.messageId, step, to: maskMobile(to) }, 'mobile change code issued');
    return { step, to: maskMobile(to), codeLength: CODE_LENGTH, expiresIn: context.settings.codeExpiresInSeconds };
  }

  app.put(
    '/v1/mobile',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.signIn,
        summary: "Change the signed-in recipient's mobile number: first a code to the current number",
        description:
          'Only for recipients who sign in by SMS (forbidden_auth_method otherwise). invalid_mobile ' +
          '(400); new_mobile_conflict (409) when it is the current number; sms_rate_limit (429). ' +
          'The code goes to the current number; POST /v1/mobile/verify with it sends one to the new number. ' +
          CSRF_NOTE,
        body: NewMobile,
        response: { 202: CodeStep, ...errorResponses(400, 401, 403, 409, 410, 429, 502) },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const found = await context.recipients.find(session.messageId, session.email);
      if (!found)
        throw new AppError('unauthorized_user', 403, 'This recipient is no longer on record for this message');
      if (found.recipient.method !== 'sms' || !found.recipient.mobile) {
        throw new AppError(
          'forbidden_auth_method',
          403,
          'This recipient signs in by email; there is no mobile number to change',
        );
      }
      const mobile = requireMobile(request.body.mobile);
      if (mobile === found.recipient.mobile)
        throw new AppError('new_mobile_conflict', 409, 'The new mobile number is the current one');
      const sent = await sendStepCode(request, session, 'current', found.recipient.mobile, found.recipient.email);
      await context.sessions.setMobileChangeTo(session.row.id, mobile);
      return reply.code(202).send(sent);
    },
  );

  app.post(
    '/v1/mobile/verify',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.signIn,
        summary: 'Confirm a step of the mobile change with the code sent for it',
        description:
          'With the code sent to the current number: 202, and a code goes to the new number. With that one: 200, the ' +
          'number is changed, and the old number and the email address are told. expired_code, incorrect_code ' +
          '(with attemptsLeft), code_replaced or code_attempts_exceeded (401) as for sign-in, with the same limit ' +
          `of wrong tries. ${CSRF_NOTE}`,
        body: ConfirmMobile,
        response: {
          200: Type.Object({ mobile: Type.String() }),
          202: CodeStep,
          ...errorResponses(400, 401, 403, 410, 429, 502),
        },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const now = new Date(context.clock.now());
      const step = session.row.code_purpose === 'mobile_current' ? 'mobile_current' : 'mobile_change';
      const before =
        step === 'mobile_change' ? await context.recipients.find(session.messageId, session.email) : undefined;
      const checked = await context.codes.check(session.row.id, request.body.code, step, now, async (trx, target) => {
        // The code was issued for this session's recipient; the session cannot have changed recipient since
        // without its code being replaced, but the check costs nothing.
        if (target.messageId !== session.messageId || target.email !== session.email) return undefined;
        if (step === 'mobile_current') return target.destination;
        await context.recipients.setMobile(trx, target.messageId, target.email, target.destination, now);
        return target.destination;
      });
      if (checked.outcome !== 'accepted') throw refusedCode(checked, context.methods.sms.wrongCode());
      if (checked.result === undefined) throw context.methods.sms.wrongCode();
      if (step === 'mobile_current') {
        // The current number is proven: now the new one, which PUT /v1/mobile kept on the session.
        const to = session.row.mobile_change_to;
        if (!to) throw new AppError('conflict', 409, 'No mobile change is under way; start again');
        return reply.code(202).send(await sendStepCode(request, session, 'new', to, session.email));
      }
      request.log.info({ messageId: session.messageId, to: maskMobile(checked.result) }, 'mobile number changed');
      // The confirmed number carries over to the recipient's later messages (docs/design.md#contacts). Told after the
      // code's transaction (the seal service may share the embedded database's one connection): the change of this
      // message stands either way, and a failure is the operator's to see.
      await context.seal
        .confirmMobile(session.email, checked.result, session.messageId, before?.recipient.mobile)
        .catch((error: unknown) =>
          request.log.error(
            { err: error, messageId: session.messageId },
            'the changed number could not be recorded for later messages',
          ),
        );
      await context.sessions.setMobileChangeTo(session.row.id, null);
      if (before?.recipient.mobile) {
        await context.mobileNotices.tell(
          {
            email: before.recipient.email,
            oldMobile: before.recipient.mobile,
            newMobile: checked.result,
            sender: before.record.sender,
            at: now,
            language: before.recipient.language,
          },
          request.log,
        );
      }
      return { mobile: checked.result };
    },
  );
}
