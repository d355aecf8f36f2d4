import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';

export interface ReaderPageOptions {
  /** dist/reader with index.html; undefined when the page could not be built. */
  page: { dir: string } | undefined;
}

/**
 * The page's own policy: code and styles only from our files, requests only to our API, nothing may
 * frame it. img-src allows https: only because a srcdoc frame inherits this policy: the message frame
 * narrows it again to data: until the reader presses "show images" (screens/message-frame.ts).
 */
export const READER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const HASHED_ASSET = /-[A-Z0-9]{8}\.(js|css|map)$/;

/**
 * GET /m/{id} (the reader link, DESIGN.md flow step 5) and the page's files under /reader/. Registered
 * beside the auth plugin rather than in it: the page is public, carries no session and may be cached.
 */
export async function readerPageRoutes(app: App, options: ReaderPageOptions) {
  const { page } = options;

  app.get(
    '/m/:id',
    {
      schema: {
        tags: ['reader'],
        summary: 'The reader page (HTML) for the sealed message {id}: sign in, read, reply',
        description: 'The same page for every id; it reads the id from its address and calls GET /v1/config?messageId={id}.',
        params: Type.Object({ id: Type.String({ maxLength: 200 }) }),
      },
    },
    async (_request, reply) => {
      if (!page) throw new AppError('unavailable', 503, 'The reader page is not built: run `npm run build` and restart the auth service');
      // Read each time (a few KB): after a rebuild the page names the new asset files at once.
      const html = await readFile(join(page.dir, 'index.html'), 'utf8');
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('content-security-policy', READER_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('x-frame-options', 'DENY')
        .header('cross-origin-opener-policy', 'same-origin')
        .header('permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=()')
        .send(html);
    },
  );

  if (!page) return;
  await app.register(fastifyStatic, {
    root: page.dir,
    prefix: '/reader/',
    decorateReply: false,
    index: false,
    // The page itself only at /m/{id}, with its policy headers.
    allowedPath: (path) => path !== '/index.html',
    cacheControl: false,
    etag: true,
    lastModified: true,
    setHeaders(response, path) {
      // Names carry a content hash: a changed file is a new name, so the old one can be kept forever.
      response.setHeader('cache-control', HASHED_ASSET.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache');
      response.setHeader('x-content-type-options', 'nosniff');
    },
  });
}
