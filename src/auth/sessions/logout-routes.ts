import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../kernel/errors.ts';
import { BROWSER_PAGE_CSP, type App, sendBrowserPage } from '../../kernel/http.ts';
import type { AuthContext } from '../context.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';
import { CSRF_HEADER, checkCsrf, sessionCsrfToken } from './csrf.ts';
import { CSRF_FIELD, confirmSignOutPage, pageLanguage, signedOutPage } from './logout-page.ts';

export type LogoutRoutesOptions = Pick<AuthContext, 'sessions' | 'cookie' | 'keys'>;

const SignedOut = Type.Object({ signedOut: Type.Literal(true) });
const SignedOutEverywhere = Type.Object({
  signedOut: Type.Literal(true),
  sessionsEnded: Type.Integer({ minimum: 0, description: 'how many sessions ended, this one included' }),
});
/** JSON for the reader page's fetch, a page for a person who opened the address. */
const PageOrJson = {
  description: 'JSON for a client that asks for it; an HTML page for a browser that asks for text/html',
  content: {
    'application/json': { schema: SignedOut },
    'text/html': { schema: Type.String() },
  },
};

/** The confirmation page posts a form to our own origin: the one thing its policy allows beyond BROWSER_PAGE_CSP. */
const CONFIRM_PAGE_CSP = BROWSER_PAGE_CSP.replace("form-action 'none'", "form-action 'self'");

/**
 * Signing out (docs/specification.md#authentication): the session row is deleted and the cookie sent with an
 * empty value and a negative Max-Age. GET /logout stays (the spec's address) but ends nothing when another site
 * sent the browser there (Sec-Fetch-Site): the SameSite=Lax cookie rides along on a top-level navigation, so a
 * link elsewhere could sign a recipient out. That request gets a page whose button posts to POST /logout.
 */
export async function logoutRoutes(app: App, context: LogoutRoutesOptions) {
  // Only this plugin reads form bodies: the confirmation's one hidden field, nothing larger.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 1024 },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );

  app.get(
    '/logout',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Sign out: deletes the session; the cookie is cleared (empty value, negative Max-Age)',
        description:
          'Only from our own pages or typed in (Sec-Fetch-Site absent, none or same-origin). Reached from another ' +
          'site (cross-site, same-site) the session stays and an HTML page asks to confirm with POST /logout.',
        response: { 200: PageOrJson },
      },
    },
    async (request, reply) => {
      const session = request.readerSession;
      if (session && fromElsewhere(request)) {
        request.log.info({ site: request.headers['sec-fetch-site'] }, 'sign-out from another site: asked to confirm');
        const token = sessionCsrfToken(context.keys.csrfKey, session);
        const language = pageLanguage(request.headers['accept-language']);
        return sendPage(reply, confirmSignOutPage(language, token, session.row.message_id ?? undefined), true);
      }
      return signOut(request, reply, context);
    },
  );

  app.post(
    '/logout',
    {
      config: { csrfInForm: true },
      schema: {
        tags: TAGS.signIn,
        summary: 'Sign out, as GET /logout does; the confirmation page posts here',
        description:
          `${CSRF_NOTE} The confirmation page's form sends the token in its \`${CSRF_FIELD}\` field instead. ` +
          'Refused (403) from another site.',
        body: Type.Optional(Type.Object({ [CSRF_FIELD]: Type.Optional(Type.String({ maxLength: 200 })) })),
        response: { 200: PageOrJson, ...errorResponses(403) },
      },
    },
    async (request, reply) => {
      if (fromElsewhere(request)) {
        throw new AppError('csrf_token_invalid', 403, 'Signing out is only possible from this site');
      }
      const presented = request.headers[CSRF_HEADER] ?? request.body?.[CSRF_FIELD];
      checkCsrf(context.keys.csrfKey, request, presented);
      return signOut(request, reply, context);
    },
  );

  app.post(
    '/v1/auth/sign-out-everywhere',
    {
      schema: {
        tags: TAGS.signIn,
        summary: "Sign out everywhere: ends every session that proved one of this session's addresses",
        description:
          `${CSRF_NOTE} Ends this session and every other one that proved (by a code) an address this one ` +
          'proved: the same recipient in other browsers and on other messages. The cookie is cleared as by ' +
          'GET /logout.',
        response: { 200: SignedOutEverywhere, ...errorResponses(403) },
      },
    },
    async (request, reply) => {
      // The CSRF guard let this through, so there is a session.
      const session = request.readerSession!;
      const ended = await context.sessions.deleteForPerson(session.row.id);
      request.readerSession = null;
      request.log.info(
        { messageId: session.row.message_id ?? undefined, sessionsEnded: ended },
        'signed out everywhere',
      );
      reply.header('set-cookie', context.cookie.clear());
      return { signedOut: true as const, sessionsEnded: ended };
    },
  );
}

/**
 * Another site sent the browser here: `cross-site`, or `same-site` (a sibling host, which may be anyone's).
 * Absent (an older browser, a script), `none` (typed in, a bookmark) and `same-origin` (our pages) may sign out.
 */
function fromElsewhere(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  return site === 'cross-site' || site === 'same-site';
}

async function signOut(request: FastifyRequest, reply: FastifyReply, context: LogoutRoutesOptions) {
  const session = request.readerSession;
  const messageId = session?.row.message_id ?? undefined;
  if (session) {
    await context.sessions.delete(session.row.id);
    request.readerSession = null;
    request.log.info({ messageId }, 'signed out');
  }
  reply.header('set-cookie', context.cookie.clear());
  if (!acceptsHtml(request)) return reply.send({ signedOut: true as const });
  return sendPage(reply, signedOutPage(pageLanguage(request.headers['accept-language']), messageId), false);
}

/** A person's browser asks for HTML (a navigation, a form); the reader page's fetch asks for JSON. */
function acceptsHtml(request: FastifyRequest): boolean {
  return /\btext\/html\b/i.test(request.headers.accept ?? '');
}

function sendPage(reply: FastifyReply, html: string, withForm: boolean) {
  return sendBrowserPage(reply, 200, html, withForm ? CONFIRM_PAGE_CSP : BROWSER_PAGE_CSP);
}
