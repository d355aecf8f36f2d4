import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import type { App } from '../../kernel/http.ts';
import { clientAddress, clientKey } from '../client-ip.ts';
import { CODE_LENGTH } from '../codes/pending-codes.ts';
import { sendCode } from '../codes/send-code.ts';
import { isProbeRefusal } from '../codes/limits.ts';
import { refusedCode } from '../codes/refused-code.ts';
import type { AuthContext, LoadedSession } from '../context.ts';
import type { SignInMethod } from '../methods/method.ts';
import { type SignInMethodName, signInMethodSchema } from '../methods/names.ts';
import { type Recipient, recordEnd } from '../seal/recipients.ts';
import type { SealedRecord } from '../seal/client.ts';
import { requireMobile } from '../mobile/number.ts';
import { MESSAGE_ID_PATTERN } from '../seal/client.ts';
import { csrfToken } from '../sessions/csrf.ts';
import { maskEmail, maskMobile } from '../masking.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';

const CodeRequest = Type.Object(
  {
    messageId: Type.String({ pattern: MESSAGE_ID_PATTERN }),
    email: Type.String({ maxLength: 320 }),
    mobile: Type.Optional(
      Type.String({ maxLength: 64, description: 'international format (+41 79 123 45 67); required for sms' }),
    ),
    method: signInMethodSchema(),
  },
  { additionalProperties: false },
);

const CodeSent = Type.Object({
  method: signInMethodSchema(),
  codeLength: Type.Integer(),
  expiresIn: Type.Integer({ description: 'seconds the code stays valid' }),
});

const VerifyRequest = Type.Object(
  {
    code: Type.String({ maxLength: 32 }),
    rememberMe: Type.Optional(
      Type.Boolean({
        description: 'keep me signed in: a persistent cookie (Max-Age) instead of a browser-session one',
      }),
    ),
  },
  { additionalProperties: false },
);

const SignedIn = Type.Object({
  signedIn: Type.Literal(true),
  messageId: Type.String(),
  email: Type.String(),
  method: signInMethodSchema({ description: 'how the code came, and so what it proved' }),
  rememberMe: Type.Boolean(),
  expiresAt: Type.String({ format: 'date-time', description: 'the absolute end of this session' }),
});

export type SignInRoutesOptions = Pick<
  AuthContext,
  | 'clock'
  | 'trustProxyHops'
  | 'sendLimit'
  | 'refusalLimit'
  | 'codes'
  | 'recipients'
  | 'methods'
  | 'sessions'
  | 'metrics'
  | 'cookie'
  | 'keys'
  | 'settings'
  | 'trail'
>;

/** POST /v1/auth/code and POST /v1/auth/verify (docs/specification.md#auth-endpoints). */
export async function signInRoutes(app: App, context: SignInRoutesOptions) {
  app.post(
    '/v1/auth/code',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Send a one-time code to a recipient of a sealed message',
        description:
          'Checks, in this order: invalid_email, invalid_mobile (400); sms_rate_limit (429, ' +
          'Retry-After) once too many requests from this client or for this message were refused in the last hour; ' +
          'unauthorized_user, forbidden_auth_method, email_and_mobile_mismatch (403, each counted as a refusal); ' +
          'sms_rate_limit (429, Retry-After) for the limits on sending. A provider failure is a 502 ' +
          'and does not count against the limits. The code replaces any earlier code of this session. ' +
          'A message that ended, or was withdrawn for this recipient, sends no code: 410 message_expired or ' +
          'message_withdrawn with endedAt and contact. ' +
          CSRF_NOTE,
        body: CodeRequest,
        response: { 200: CodeSent, ...errorResponses(400, 403, 410, 429, 502) },
      },
    },
    async (request) => {
      const session = request.readerSession as LoadedSession; // the CSRF guard let it through: there is one
      const body = request.body;
      const email = normalizeEmail(body.email);
      if (!email) throw new AppError('invalid_email', 400, 'This is not a valid email address');
      let mobile: string | undefined;
      if (body.method === 'sms') {
        mobile = requireMobile(body.mobile);
      }
      const client = clientKey(clientAddress(request, context.trustProxyHops));
      // Counted before the lookup, so that probing for recipients and their numbers meets a limit too.
      const counted = await context.refusalLimit.count(
        { client, message_id: body.messageId },
        new Date(context.clock.now()),
      );
      const { record, recipient, method, destination } = await matchRecipient(context, body, email, mobile).catch(
        async (error: unknown) => {
          if (!isProbeRefusal(error)) await counted.release();
          throw error;
        },
      );
      await counted.release();
      // Ended for everyone, or withdrawn for this recipient: no code, the reader is told (and whom to ask).
      const end = recordEnd(record, new Date(context.clock.now()), recipient.email);
      if (end) throw end;
      return issueCode(context, request, session, {
        recipient,
        method,
        destination,
        messageId: body.messageId,
        client,
      });
    },
  );

  app.post(
    '/v1/auth/code/resend',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Send a new code to where the last code of this session went',
        description:
          'For the reader page after a reload: it knows that a code was sent ' +
          '(GET /v1/config, codePending) but not the number or address it went to. ' +
          "Sends a new code to the same recipient and destination as the session's last code for this message " +
          '(also after that code was voided or expired), under the same sending limits as POST /v1/auth/code ' +
          '(sms_rate_limit, 429). 404 not_found when this session asked for no code for the message. ' +
          CSRF_NOTE,
        body: Type.Object({ messageId: Type.String({ pattern: MESSAGE_ID_PATTERN }) }, { additionalProperties: false }),
        response: { 200: CodeSent, ...errorResponses(400, 403, 404, 410, 429, 502) },
      },
    },
    async (request) => {
      const session = request.readerSession as LoadedSession;
      const { messageId } = request.body;
      const last = context.codes.latest(session.row, messageId);
      if (!last)
        throw new AppError(
          'not_found',
          404,
          'This session asked for no code for this message: ask with POST /v1/auth/code',
        );
      const found = await context.recipients.find(messageId, last.email);
      if (!found) throw new AppError('unauthorized_user', 403, 'This email address may not read this message');
      const end = recordEnd(found.record, new Date(context.clock.now()), found.recipient.email);
      if (end) throw end;
      const client = clientKey(clientAddress(request, context.trustProxyHops));
      return issueCode(context, request, session, {
        recipient: found.recipient,
        method: context.methods[last.method],
        destination: last.destination,
        messageId,
        client,
      });
    },
  );

  app.post(
    '/v1/auth/verify',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Sign in with the code',
        description:
          'Right code: the session is signed in for the message and recipient the code was sent for, ' +
          'its id is rotated (new Set-Cookie; with rememberMe a persistent cookie with Max-Age) and a ' +
          'new CSRF token comes in X-CSRF-Token. Right but older than SMS_CODE_EXPIRATION: expired_code. ' +
          'Wrong or none: incorrect_code (email codes: invalid_code_or_email), with attemptsLeft: ' +
          'the wrong tries left. The try that reaches CODE_MAX_ATTEMPTS voids the code: code_attempts_exceeded ' +
          '(401), also for every later try, the right code included, until a new one is requested. ' +
          'A code that a newer one replaced, while it would still be fresh: code_replaced (401) with the new ' +
          "code's attemptsLeft, no try spent (docs/specification.md#error-codes). " +
          CSRF_NOTE,
        body: VerifyRequest,
        response: { 200: SignedIn, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const session = request.readerSession as LoadedSession;
      const rememberMe = request.body.rememberMe === true;
      const now = new Date(context.clock.now());
      // Whom a wrong try is against, for the trail: the reader's pending code, read before it is checked.
      const { row } = session;
      const tried =
        row.code_purpose === 'sign_in' && row.code_message_id && row.code_email
          ? { messageId: row.code_message_id, recipient: row.code_email }
          : undefined;
      const checked = await context.codes.check(session.row.id, request.body.code, 'sign_in', now, (trx, target) =>
        context.sessions.signIn(
          trx,
          session.row.id,
          {
            messageId: target.messageId,
            email: target.email,
            method: target.method,
            mobile: target.destination,
            rememberMe,
          },
          now,
        ),
      );
      context.metrics.signIns.inc({ outcome: OUTCOME_LABEL[checked.outcome] });
      const client = context.trail.client(request);
      if (checked.outcome === 'accepted') {
        const { messageId, email: recipient } = checked.target;
        context.trail.report(messageId, { event: 'sign_in_succeeded', recipient, client }, request.log);
      } else if (tried) {
        context.trail.report(
          tried.messageId,
          { event: 'sign_in_failed', recipient: tried.recipient, client },
          request.log,
        );
      }
      if (checked.outcome !== 'accepted') {
        request.log.info({ method: checked.method, outcome: checked.outcome }, 'sign-in code refused');
        throw refusedCode(checked, context.methods[checked.method ?? 'sms'].wrongCode());
      }
      const { token, expiresAt } = checked.result;
      reply.header(
        'set-cookie',
        context.cookie.set(token, rememberMe ? context.settings.rememberMeMaxAgeSeconds : undefined),
      );
      reply.header('x-csrf-token', csrfToken(context.keys.csrfKey, token));
      request.log.info({ messageId: checked.target.messageId, method: checked.target.method, rememberMe }, 'signed in');
      const { messageId, email, method } = checked.target;
      return { signedIn: true as const, messageId, email, method, rememberMe, expiresAt: expiresAt.toISOString() };
    },
  );
}

const OUTCOME_LABEL = {
  accepted: 'signed_in',
  expired: 'expired_code',
  incorrect: 'incorrect_code',
  voided: 'code_attempts_exceeded',
  replaced: 'code_replaced',
} as const;

/**
 * Sends a new code to `destination` under the sending limits and stores it as the session's code,
 * replacing any earlier one.
 */
async function issueCode(
  context: SignInRoutesOptions,
  request: FastifyRequest,
  session: LoadedSession,
  to: { recipient: Recipient; method: SignInMethod; destination: string; messageId: string; client: string },
): Promise<{ method: SignInMethodName; codeLength: number; expiresIn: number }> {
  const { recipient, method, destination, messageId } = to;
  await sendCode(
    context,
    session.row.id,
    { purpose: 'sign_in', method: method.name, messageId, email: recipient.email, destination },
    { method, client: to.client, log: request.log, language: recipient.language },
  );
  request.log.info({ messageId, method: method.name }, 'sign-in code issued');
  const masked = method.name === 'sms' ? maskMobile(destination) : maskEmail(destination);
  context.trail.report(
    messageId,
    {
      event: 'code_sent',
      recipient: recipient.email,
      client: context.trail.client(request),
      detail: { method: method.name, destination: masked },
    },
    request.log,
  );
  return { method: method.name, codeLength: CODE_LENGTH, expiresIn: context.settings.codeExpiresInSeconds };
}

/**
 * The recipient the request names, the method they sign in by, and where their code goes; throws
 * unauthorized_user, forbidden_auth_method or email_and_mobile_mismatch (the answers a prober learns from).
 */
async function matchRecipient(
  context: Pick<AuthContext, 'recipients' | 'methods'>,
  body: { messageId: string; method: SignInMethodName },
  email: string,
  mobile: string | undefined,
): Promise<{ record: SealedRecord; recipient: Recipient; method: SignInMethod; destination: string }> {
  const found = await context.recipients.find(body.messageId, email);
  if (!found) throw new AppError('unauthorized_user', 403, 'This email address may not read this message');
  const { recipient } = found;
  if (recipient.method !== body.method) {
    throw new AppError(
      'forbidden_auth_method',
      403,
      `This recipient signs in by ${recipient.method}, not by ${body.method}`,
    );
  }
  const method = context.methods[body.method];
  return { record: found.record, recipient, method, destination: method.destination(recipient, mobile) };
}
