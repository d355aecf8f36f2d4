import { Type } from 'typebox';
import { notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import type { AuthContext } from '../context.ts';
import { CODE_LENGTH } from '../codes/pending-codes.ts';
import { shownHeader } from '../hidden-characters.ts';
import { maskEmail, maskMobile } from '../masking.ts';
import { type SignInMethodName, signInMethodSchema } from '../methods/names.ts';
import { MESSAGE_ID_PATTERN } from '../seal/client.ts';
import { recordEnd } from '../seal/recipients.ts';
import { sessionCsrfToken } from '../sessions/csrf.ts';
import { TAGS, errorResponses } from '../route-docs.ts';

const ReaderConfig = Type.Object({
  messageId: Type.Optional(Type.String()),
  methods: Type.Optional(
    Type.Array(signInMethodSchema(), {
      description:
        'sign-in methods the recipients of this message may use (sms: they were given a mobile number; email: not)',
    }),
  ),
  sender: Type.Optional(
    Type.String({
      description:
        "the sealed message's sender, shown by the reader page before sign-in (as the notification names it); " +
        'hidden characters removed (bidi controls, zero-width characters)',
    }),
  ),
  subject: Type.Optional(
    Type.String({
      description:
        "the sealed message's subject, only when READER_SUBJECT_BEFORE_SIGN_IN=true (a subject may be " +
        'confidential, and the link may have been forwarded); hidden characters removed',
    }),
  ),
  ended: Type.Optional(
    Type.Object(
      {
        reason: Type.Union([Type.Literal('expired'), Type.Literal('withdrawn')]),
        at: Type.String({ format: 'date-time', description: 'when it ended' }),
      },
      {
        description:
          'the message ended for everyone (docs/specification.md#end-dates): the reader page shows that, and whom ' +
          'to ask (the sender), instead of a sign-in form; subject and methods are left out. A withdrawal for one ' +
          'recipient is not told here, before anyone proved who they are, but by the 410 of their requests',
      },
    ),
  ),
  signedIn: Type.Boolean({ description: 'this session is signed in (for messageId when one is given)' }),
  email: Type.Optional(Type.String({ description: 'the signed-in recipient (when signedIn)' })),
  method: Type.Optional(
    signInMethodSchema({ description: 'how that recipient signs in to this message (when signedIn)' }),
  ),
  codePending: Type.Optional(
    Type.Object(
      {
        method: signInMethodSchema(),
        destination: Type.String({ description: 'where the code went, masked (+41******67, a***@example.com)' }),
        email: Type.String({ description: 'the recipient the code is for (the address the reader typed)' }),
        sentAt: Type.String({ format: 'date-time' }),
        expiresIn: Type.Integer({ minimum: 1, description: 'seconds the code stays valid from now' }),
        attemptsLeft: Type.Integer({ minimum: 1, description: 'wrong tries left before the code is void' }),
      },
      {
        description:
          'not signed in, and this session asked for a sign-in code for messageId that can still be tried: ' +
          'the reader page shows the code screen again after a reload instead ' +
          'of sending another code (POST /v1/auth/code/resend sends a new one)',
      },
    ),
  ),
  codeGone: Type.Optional(
    Type.Object(
      {
        reason: Type.Union([Type.Literal('expired'), Type.Literal('voided')], {
          description: 'expired: older than SMS_CODE_EXPIRATION; voided: entered wrongly CODE_MAX_ATTEMPTS times',
        }),
        method: signInMethodSchema(),
        destination: Type.String({ description: 'where the code went, masked' }),
        email: Type.String({ description: 'the recipient the code was for' }),
        sentAt: Type.String({ format: 'date-time' }),
      },
      {
        description:
          'not signed in, and the last sign-in code this session asked for messageId can no longer be tried: the ' +
          'reader page says so after a reload, with its one action, a new code (POST /v1/auth/code/resend)',
      },
    ),
  ),
  codeLength: Type.Integer(),
  codeExpiresIn: Type.Integer({ description: 'seconds a code stays valid (SMS_CODE_EXPIRATION)' }),
  maxAttempts: Type.Integer({ description: 'wrong tries after which a code is void' }),
  rememberMeMaxAge: Type.Integer({ description: "seconds a 'keep me signed in' session lasts" }),
  limits: Type.Object({
    perNumberInterval: Type.Integer({ description: 'seconds between two codes to one number (or address)' }),
    perNumberHourly: Type.Integer(),
    perIpHourly: Type.Integer(),
  }),
});

/**
 * GET /v1/config (docs/specification.md#auth-endpoints): the reader page's settings and the CSRF token
 * (X-CSRF-Token header). Starts a server-side session when the request has none, with a browser-session
 * cookie.
 */
export type ConfigRoutesOptions = Pick<
  AuthContext,
  'clock' | 'seal' | 'sessions' | 'cookie' | 'keys' | 'access' | 'codes' | 'settings'
>;

export async function configRoutes(app: App, context: ConfigRoutesOptions) {
  app.get(
    '/v1/config',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Reader settings and the CSRF token; starts a session',
        description:
          'The X-CSRF-Token response header carries the token that every POST, PUT and DELETE must send back. ' +
          'Without a session cookie, a session is started (Set-Cookie, browser session). Recipients are not listed: ' +
          "only which methods the message's recipients use.",
        querystring: Type.Object(
          { messageId: Type.Optional(Type.String({ pattern: MESSAGE_ID_PATTERN })) },
          { additionalProperties: false },
        ),
        response: { 200: ReaderConfig, ...errorResponses(400, 404, 502) },
      },
    },
    async (request, reply) => {
      const { messageId } = request.query;
      let methods: SignInMethodName[] | undefined;
      let about:
        | { sender: string; subject?: string; ended?: { reason: 'expired' | 'withdrawn'; at: string } }
        | undefined;
      if (messageId !== undefined) {
        const record = await context.seal.sealed(messageId);
        if (!record) throw notFound('No sealed message with this id');
        const end = recordEnd(record, new Date(context.clock.now()));
        if (end) {
          // Nothing of an ended message but who sent it, whom the reader may ask, and when and how it ended.
          const reason = end.errorCode === 'message_expired' ? ('expired' as const) : ('withdrawn' as const);
          about = { sender: shownHeader(record.sender), ended: { reason, at: end.details.endedAt ?? record.sealedAt } };
        } else {
          methods = [...new Set(record.recipients.map((r) => r.method))].sort();
          // Before sign-in the page says who sent the message, as the notification does, so that the recipient
          // knows what the code is for (docs/design.md#reading). The subject may be confidential and the link
          // forwarded or leaked: it stays behind the code unless the operator opts in.
          about = {
            sender: shownHeader(record.sender),
            ...(context.settings.subjectBeforeSignIn ? { subject: shownHeader(record.subject) } : {}),
          };
        }
      }
      let session = request.readerSession;
      if (!session) {
        const issued = await context.sessions.create(new Date(context.clock.now()));
        session = { row: issued.session, token: issued.token };
        request.readerSession = session;
        reply.header('set-cookie', context.cookie.set(issued.token));
      }
      reply.header('x-csrf-token', sessionCsrfToken(context.keys.csrfKey, session));
      // Signed in for this message when the session signed in for it, or has proven what it asks for
      // (docs/decisions.md#sessions-follow-the-person): then it opens without another code.
      let openedAs: { email: string; method?: SignInMethodName } | undefined;
      const last = session.row.email
        ? { email: session.row.email, ...(session.row.method ? { method: session.row.method } : {}) }
        : undefined;
      if (messageId === undefined || session.row.message_id === messageId) openedAs = last;
      else if (session.row.signed_in_at) openedAs = await context.access.open(session.row.id, messageId);
      const signedIn = Boolean(session.row.message_id) && openedAs !== undefined;
      const { settings } = context;
      const pending = !signedIn && messageId !== undefined ? context.codes.latest(session.row, messageId) : undefined;
      const expiresIn = pending
        ? Math.floor((pending.createdAt.getTime() + settings.codeExpiresInSeconds * 1000 - context.clock.now()) / 1000)
        : 0;
      // Only a code that can still be tried: after an expired or void one the page starts at sign-in again.
      const codePending =
        pending?.live === true && expiresIn > 0
          ? {
              method: pending.method,
              destination: pending.method === 'sms' ? maskMobile(pending.destination) : maskEmail(pending.destination),
              email: pending.email,
              sentAt: pending.createdAt.toISOString(),
              expiresIn,
              attemptsLeft: pending.attemptsLeft,
            }
          : undefined;
      // A code that can no longer be tried is still told, so that a reload keeps saying why and offers a new one.
      const codeGone =
        pending && !codePending
          ? {
              reason: pending.voided ? ('voided' as const) : ('expired' as const),
              method: pending.method,
              destination: pending.method === 'sms' ? maskMobile(pending.destination) : maskEmail(pending.destination),
              email: pending.email,
              sentAt: pending.createdAt.toISOString(),
            }
          : undefined;
      return {
        ...(messageId !== undefined ? { messageId, ...(methods ? { methods } : {}), ...about } : {}),
        signedIn,
        ...(signedIn && openedAs ? openedAs : {}),
        ...(codePending ? { codePending } : {}),
        ...(codeGone ? { codeGone } : {}),
        codeLength: CODE_LENGTH,
        codeExpiresIn: settings.codeExpiresInSeconds,
        maxAttempts: settings.maxAttempts,
        rememberMeMaxAge: settings.rememberMeMaxAgeSeconds,
        limits: {
          perNumberInterval: settings.limits.perNumberIntervalSeconds,
          perNumberHourly: settings.limits.perNumberHourly,
          perIpHourly: settings.limits.perIpHourly,
        },
      };
    },
  );
}
