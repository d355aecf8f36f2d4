import type { App } from '../kernel/http.ts';
import type { AuthContext } from './context.ts';
import { configRoutes } from './sign-in/config-routes.ts';
import { filesRoutes } from './replies/files-routes.ts';
import { logoutRoutes } from './sessions/logout-routes.ts';
import { messageRoutes } from './message/routes.ts';
import { laterMobileRoutes } from './mobile/later-routes.ts';
import { mobileRoutes } from './mobile/routes.ts';
import { replyRoutes } from './replies/reply-routes.ts';
import { signInRoutes } from './sign-in/routes.ts';
import { senderSealedRoutes } from './senders/sealed-routes.ts';
import { senderSignInRoutes } from './senders/sign-in-routes.ts';
import { csrfGuard, SAFE_METHODS } from './sessions/csrf.ts';

export interface AuthPluginOptions {
  auth: AuthContext;
}

/**
 * The auth service's routes. Every route registered here or in a plugin registered below (reading,
 * replies) passes the same two hooks first: the session cookie is looked up, then the CSRF guard
 * refuses POST, PUT and DELETE without the session's token. Nothing here answers /m/{id}: that path
 * is the reader page's (src/auth/reader/routes.ts), which is public and may be cached.
 */
export async function authPlugin(app: App, options: AuthPluginOptions) {
  const context = options.auth;
  app.decorateRequest('readerSession', null);
  app.addHook('onRequest', async (request) => {
    const token = context.cookie.read(request.headers.cookie);
    if (!token) return;
    // A request that changes state (a code, sign-in, a mobile change, a reply) goes by the row in
    // PostgreSQL, never by a copy that a change on another instance may not have reached yet.
    const fresh = !SAFE_METHODS.has(request.method);
    const row = await context.sessions.findByToken(token, new Date(context.clock.now()), { fresh });
    if (row) request.readerSession = { row, token };
  });
  app.addHook('onRequest', csrfGuard(context.keys.csrfKey));
  // Answers carry tokens, cookies and private mail: no shared cache may keep them.
  app.addHook('onSend', async (_request, reply) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
  });

  await app.register(configRoutes, context);
  await app.register(signInRoutes, context);
  await app.register(mobileRoutes, context);
  await app.register(laterMobileRoutes, context);
  await app.register(logoutRoutes, context);
  await app.register(messageRoutes, context);
  await app.register(filesRoutes, context);
  await app.register(replyRoutes, context);
  await app.register(senderSignInRoutes, context);
  await app.register(senderSealedRoutes, context);
}
