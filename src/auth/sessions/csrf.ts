import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../../kernel/errors.ts';
import type { LoadedSession } from '../context.ts';
import type { SessionRow } from '../tables.ts';

export const CSRF_HEADER = 'x-csrf-token';
/** Methods that change nothing (RFC 9110 §9.2.1): no CSRF token, and the session may come from the cache. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The per-session CSRF token is an HMAC of the session token (docs/specification.md#csrf): nothing to
 * store, different for every session, and new whenever the session token is rotated at sign-in.
 */
export function csrfToken(csrfKey: Buffer, sessionToken: string): string {
  return createHmac('sha256', csrfKey).update(sessionToken, 'utf8').digest('base64url');
}

const issued = new WeakMap<SessionRow, { csrfKey: Buffer; token: string }>();

/**
 * The CSRF token of the request's session, computed once per row object: a row from the session cache
 * serves every request of its session for a while, and its token (named by the row's token hash) does
 * not change, so neither does the HMAC. A row read afresh is a new object and gets it computed again.
 */
export function sessionCsrfToken(csrfKey: Buffer, session: LoadedSession): string {
  const known = issued.get(session.row);
  if (known?.csrfKey === csrfKey) return known.token;
  const token = csrfToken(csrfKey, session.token);
  issued.set(session.row, { csrfKey, token });
  return token;
}

/**
 * onRequest guard for every route of the auth service: each POST, PUT, DELETE (and PATCH) needs the
 * session's token in X-CSRF-Token, else 403 with an error object. It runs before the body is read, so
 * a forged request costs no parsing, upload or database write.
 */
export function csrfGuard(csrfKey: Buffer) {
  return async (request: FastifyRequest) => {
    if (SAFE_METHODS.has(request.method)) return;
    // A form body may carry the token itself: the route checks it once the body is read (csrfInForm). Any other
    // body is refused here as everywhere, before it is read.
    if (request.routeOptions.config.csrfInForm && isForm(request)) return;
    checkCsrf(csrfKey, request, request.headers[CSRF_HEADER]);
  };
}

function isForm(request: FastifyRequest): boolean {
  return /^application\/x-www-form-urlencoded\s*(;|$)/i.test(request.headers['content-type'] ?? '');
}

/**
 * The check of csrfGuard with the token from wherever the route takes it: the header, or the hidden field of a
 * form on our own page (a plain HTML form cannot set a header; POST /logout's confirmation).
 */
export function checkCsrf(csrfKey: Buffer, request: FastifyRequest, presented: unknown): void {
  const session = request.readerSession;
  if (!session || typeof presented !== 'string' || !sameSecret(presented, csrfToken(csrfKey, session.token))) {
    throw new AppError(
      'csrf_token_invalid',
      403,
      `${request.method} requests need the X-CSRF-Token header with the ` +
        'token of this session (from GET /v1/config or GET /v1/message/files)',
    );
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route checks the CSRF token itself with checkCsrf(), from its form body or the header. */
    csrfInForm?: boolean;
  }
}

/** Constant-time equality of two strings of any lengths (digests first: timingSafeEqual wants equal sizes). */
export function sameSecret(a: string, b: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}
