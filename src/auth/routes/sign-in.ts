import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import type { App } from '../../kernel/http.ts';
import { clientAddress, clientKey } from '../client-ip.ts';
import { CODE_LENGTH } from '../codes/pending-codes.ts';
import { isProbeRefusal } from '../codes/refusal-limit.ts';
import type { AuthContext, LoadedSession } from '../context.ts';
import type { SignInMethod } from '../methods/method.ts';
import type { Recipient } from '../seal/recipients.ts';
import { normalizeMobile } from '../mobile.ts';
import { MESSAGE_ID_PATTERN } from '../seal/client.ts';
import { csrfToken } from '../sessions/csrf.ts';
import { CSRF_NOTE, TAGS, errorResponses } from './errors.ts';

const CodeRequest = Type.Object(
  {
    messageId: Type.String({ pattern: MESSAGE_ID_PATTERN }),
    email: Type.String({ maxLength: 320 }),
    mobile: Type.Optional(Type.String({ maxLength: 64, description: 'international format (+41 79 123 45 67); required for sms' })),
    method: Type.Union([Type.Literal('sms'), Type.Literal('email')]),
  },
  { additionalProperties: false },
);

const CodeSent = Type.Object({
  method: Type.Union([Type.Literal('sms'), Type.Literal('email')]),
  codeLength: Type.Integer(),
  expiresIn: Type.Integer({ description: 'seconds the code stays valid' }),
});

const VerifyRequest = Type.Object(
  {
    code: Type.String({ maxLength: 32 }),
    rememberMe: Type.Optional(Type.Boolean({ description: "keep me signed in: a persistent cookie (Max-Age) instead of a browser-session one" })),
  },
  { additionalProperties: false },
);

const SignedIn = Type.Object({
  signedIn: Type.Literal(true),
  messageId: Type.String(),
  email: Type.String(),
  rememberMe: Type.Boolean(),
  expiresAt: Type.String({ format: 'date-time', description: 'the absolute end of this session' }),
});

/** POST /v1/auth/code and POST /v1/auth/verify (docs/specification.md#auth-endpoints). */
export async function signInRoutes(app: App, context: AuthContext) {
  app.post(
    '/v1/auth/code',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Send a one-time code to a recipient of a sealed message',
        description:
          'Checks, in this order: invalid_email, invalid_mobile (400); sms_rate_limit (429, Retry-After) once too many ' +
          'requests from this client or for this message were refused in the last hour; unauthorized_user, ' +
          'forbidden_auth_method, email_and_mobile_mismatch (403, each counted as a refusal); sms_rate_limit (429, ' +
          'Retry-After) for the limits on sending. A provider failure is a 502 and does not count against the limits. ' +
          'The code replaces any earlier code of this session. ' +
          CSRF_NOTE,
        body: CodeRequest,
        response: { 200: CodeSent, ...errorResponses(400, 403, 429, 502) },
      },
    },
    async (request) => {
      const session = request.readerSession as LoadedSession; // the CSRF guard let it through: there is one
      const body = request.body;
      const email = normalizeEmail(body.email);
      if (!email) throw new AppError('invalid_email', 400, 'This is not a valid email address');
      let mobile: string | undefined;
      if (body.method === 'sms') {
        mobile = normalizeMobile(body.mobile);
        if (!mobile) throw new AppError('invalid_mobile', 400, 'This is not a valid mobile number in international format (+41 79 123 45 67)');
      }
      const client = clientKey(clientAddress(request, context.trustProxyHops));
      // Counted before the lookup, so that probing for recipients and their numbers meets a limit too.
      const checked = await context.limiter.refusals.check(body.messageId, client, new Date());
      const { recipient, method, destination } = await matchRecipient(context, body, email, mobile).catch(async (error: unknown) => {
        if (!isProbeRefusal(error)) await checked.notRefused();
        throw error;
      });
      await checked.notRefused();

      const reservation = await context.limiter.reserve(method.limitKey(destination), client, new Date());
      const code = context.codes.newCode();
      try {
        await method.send(destination, code, request.log, recipient.language);
      } catch (error) {
        await reservation.release();
        throw error;
      }
      await context.codes.store(
        session.row.id,
        { purpose: 'sign_in', method: method.name, messageId: body.messageId, email: recipient.email, destination },
        code,
        new Date(),
      );
      request.log.info({ messageId: body.messageId, method: method.name }, 'sign-in code issued');
      return { method: method.name, codeLength: CODE_LENGTH, expiresIn: context.settings.codeExpiresInSeconds };
    },
  );

  app.post(
    '/v1/auth/verify',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Sign in with the code',
        description:
          'Right code: the session is signed in for the message and recipient the code was sent for, its id is rotated ' +
          '(new Set-Cookie; with rememberMe a persistent cookie with Max-Age) and a new CSRF token comes in X-CSRF-Token. ' +
          'Right but older than SMS_CODE_EXPIRATION: expired_code. Wrong or none: incorrect_code (email codes: ' +
          'invalid_code_or_email); after CODE_MAX_ATTEMPTS wrong tries the code is void and a new one must be requested. ' +
          CSRF_NOTE,
        body: VerifyRequest,
        response: { 200: SignedIn, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const session = request.readerSession as LoadedSession;
      const rememberMe = request.body.rememberMe === true;
      const now = new Date();
      const checked = await context.codes.check(session.row.id, request.body.code, 'sign_in', now, (trx, target) =>
        context.sessions.signIn(trx, session.row.id, { messageId: target.messageId, email: target.email, method: target.method, rememberMe }, now),
      );
      context.metrics.signIns.inc({ outcome: checked.outcome === 'expired' ? 'expired_code' : checked.outcome === 'incorrect' ? 'incorrect_code' : 'signed_in' });
      if (checked.outcome === 'expired') throw new AppError('expired_code', 401, 'The code has expired; request a new one');
      if (checked.outcome === 'incorrect') {
        request.log.info({ method: checked.method }, 'wrong sign-in code');
        throw context.methods[checked.method ?? 'sms'].wrongCode();
      }
      const { token, expiresAt } = checked.result;
      reply.header('set-cookie', context.cookie.set(token, rememberMe ? context.settings.rememberMeMaxAgeSeconds : undefined));
      reply.header('x-csrf-token', csrfToken(context.keys.csrfKey, token));
      request.log.info({ messageId: checked.target.messageId, method: checked.target.method, rememberMe }, 'signed in');
      return { signedIn: true as const, messageId: checked.target.messageId, email: checked.target.email, rememberMe, expiresAt: expiresAt.toISOString() };
    },
  );
}

/**
 * The recipient the request names, the method they sign in by, and where their code goes; throws
 * unauthorized_user, forbidden_auth_method or email_and_mobile_mismatch (the answers a prober learns from).
 */
async function matchRecipient(
  context: AuthContext,
  body: { messageId: string; method: 'sms' | 'email' },
  email: string,
  mobile: string | undefined,
): Promise<{ recipient: Recipient; method: SignInMethod; destination: string }> {
  const found = await context.recipients.find(body.messageId, email);
  if (!found) throw new AppError('unauthorized_user', 403, 'This email address may not read this message');
  const { recipient } = found;
  if (recipient.method !== body.method) {
    throw new AppError('forbidden_auth_method', 403, `This recipient signs in by ${recipient.method}, not by ${body.method}`);
  }
  const method = context.methods[body.method];
  return { recipient, method, destination: method.destination(recipient, mobile) };
}
