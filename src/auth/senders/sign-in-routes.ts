import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import type { App } from '../../kernel/http.ts';
import { clientAddress, clientKey } from '../client-ip.ts';
import { CODE_LENGTH } from '../codes/pending-codes.ts';
import { sendCode } from '../codes/send-code.ts';
import type { AuthContext, LoadedSession } from '../context.ts';
import { maskEmail } from '../masking.ts';
import { emailKey } from '../seal/recipients.ts';
import { csrfToken, sessionCsrfToken } from '../sessions/csrf.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';
import { inSenderDomains } from './domains.ts';
import { refusedCode } from '../codes/refused-code.ts';

/**
 * What a sender's code is bound to in place of a message: it is for the sender's page, not for reading. Not
 * of the shape of a message id (MESSAGE_ID_PATTERN), so no reader's code can be taken for it or it for one.
 */
export const SENDER_CODE_SCOPE = '~sender';

const SenderConfig = Type.Object({
  signedIn: Type.Boolean({ description: 'this session holds a proven sender address' }),
  sender: Type.Optional(Type.String({ description: 'that address (when signedIn)' })),
  codeLength: Type.Integer(),
});

export type SenderSignInOptions = Pick<
  AuthContext,
  'clock' | 'trustProxyHops' | 'sendLimit' | 'codes' | 'methods' | 'sessions' | 'cookie' | 'keys' | 'settings'
> &
  Pick<AuthContext, 'senderDomains'>;

/**
 * The sender's sign-in (docs/specification.md#auth-endpoints-for-senders): a code by email to the sender's own
 * address, under the recipients' code rules (pending-codes.ts), sending limits and CSRF. Nothing here asks the
 * seal service: whether the address ever sent a message is not told, and not known, before sign-in.
 */
export async function senderSignInRoutes(app: App, context: SenderSignInOptions) {
  app.get(
    '/v1/sender/config',
    {
      schema: {
        tags: TAGS.sender,
        summary: "The sender's page: whether this session holds a sender's address, and the CSRF token",
        description:
          'Starts a session when the request has none (Set-Cookie, browser session); X-CSRF-Token carries the ' +
          'token every POST and PUT must send back.',
        response: { 200: SenderConfig },
      },
    },
    async (request, reply) => {
      let session = request.readerSession;
      if (!session) {
        const issued = await context.sessions.create(new Date(context.clock.now()));
        session = { row: issued.session, token: issued.token };
        request.readerSession = session;
        reply.header('set-cookie', context.cookie.set(issued.token));
      }
      reply.header('x-csrf-token', sessionCsrfToken(context.keys.csrfKey, session));
      const { sender } = session.row;
      return { signedIn: sender !== null, ...(sender ? { sender } : {}), codeLength: CODE_LENGTH };
    },
  );

  app.post(
    '/v1/sender/code',
    {
      schema: {
        tags: TAGS.sender,
        summary: "Send a code to a sender's own address",
        description:
          'The same answer whether or not the address ever sent a message, and for an address outside ' +
          'INBOUND_SMTP_SENDER_DOMAINS (which gets no code: the request is logged). invalid_email (400); ' +
          "sms_rate_limit (429, Retry-After) under the limits of the recipients' codes, which count every request. " +
          'The code replaces any earlier code of this session. ' +
          CSRF_NOTE,
        body: Type.Object({ email: Type.String({ maxLength: 320 }) }, { additionalProperties: false }),
        response: {
          200: Type.Object({ method: Type.Literal('email'), codeLength: Type.Integer(), expiresIn: Type.Integer() }),
          ...errorResponses(400, 403, 429, 502),
        },
      },
    },
    async (request) => {
      const session = request.readerSession as LoadedSession; // the CSRF guard let it through: there is one
      const typed = normalizeEmail(request.body.email);
      if (!typed) throw new AppError('invalid_email', 400, 'This is not a valid email address');
      const email = emailKey(typed);
      const client = clientKey(clientAddress(request, context.trustProxyHops));
      const method = context.methods.email;
      const answer = {
        method: 'email' as const,
        codeLength: CODE_LENGTH,
        expiresIn: context.settings.codeExpiresInSeconds,
      };
      if (!inSenderDomains(email, context.senderDomains)) {
        // Counted as a send, so that the limits answer alike inside and outside the domains; no code goes.
        await context.sendLimit.count({ destination: method.limitKey(email), client }, new Date(context.clock.now()));
        request.log.info(
          { to: maskEmail(email) },
          "sender's code refused: address outside INBOUND_SMTP_SENDER_DOMAINS",
        );
        return answer;
      }
      await sendCode(
        context,
        session.row.id,
        { purpose: 'sender', method: 'email', messageId: SENDER_CODE_SCOPE, email, destination: email },
        { method, client, log: request.log },
      );
      request.log.info({ to: maskEmail(email) }, "sender's code issued");
      return answer;
    },
  );

  app.post(
    '/v1/sender/verify',
    {
      schema: {
        tags: TAGS.sender,
        summary: "Sign in to the sender's page with the code",
        description:
          "Right code: the session now holds the sender's address, its id is rotated (new Set-Cookie) and a new " +
          'CSRF token comes in X-CSRF-Token. Otherwise as POST /v1/auth/verify: expired_code, ' +
          'invalid_code_or_email with attemptsLeft, code_replaced, code_attempts_exceeded (401). ' +
          CSRF_NOTE,
        body: Type.Object({ code: Type.String({ maxLength: 32 }) }, { additionalProperties: false }),
        response: { 200: Type.Object({ sender: Type.String() }), ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const session = request.readerSession as LoadedSession;
      const now = new Date(context.clock.now());
      const checked = await context.codes.check(session.row.id, request.body.code, 'sender', now, (trx, target) =>
        context.sessions.signInSender(trx, session.row.id, target.email, now),
      );
      if (checked.outcome !== 'accepted') {
        request.log.info({ outcome: checked.outcome }, "sender's code refused");
        throw refusedCode(checked, context.methods.email.wrongCode());
      }
      const { token } = checked.result;
      reply.header('set-cookie', context.cookie.set(token));
      reply.header('x-csrf-token', csrfToken(context.keys.csrfKey, token));
      request.log.info({ sender: maskEmail(checked.target.email) }, 'sender signed in');
      return { sender: checked.target.email };
    },
  );
}
