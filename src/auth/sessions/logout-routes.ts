import { Type } from 'typebox';
import type { App } from '../../kernel/http.ts';
import type { AuthContext } from '../context.ts';
import { TAGS } from '../route-docs.ts';

/**
 * GET /logout (docs/specification.md#authentication): deletes the session row and sends the cookie with an
 * empty value and a negative Max-Age. Answered the same with or without a session, so it reveals nothing.
 */
export async function logoutRoutes(app: App, context: Pick<AuthContext, 'sessions' | 'cookie'>) {
  app.get(
    '/logout',
    {
      schema: {
        tags: TAGS.signIn,
        summary: 'Sign out: deletes the session; the cookie is cleared (empty value, negative Max-Age)',
        response: { 200: Type.Object({ signedOut: Type.Literal(true) }) },
      },
    },
    async (request, reply) => {
      const session = request.readerSession;
      if (session) {
        await context.sessions.delete(session.row.id);
        request.readerSession = null;
        request.log.info({ messageId: session.row.message_id ?? undefined }, 'signed out');
      }
      reply.header('set-cookie', context.cookie.clear());
      return { signedOut: true as const };
    },
  );
}
