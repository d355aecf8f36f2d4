import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import { Type } from 'typebox';
import { AppError, errorObject } from '../../kernel/errors.ts';
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
 * GET /m/{id} (the reader link, docs/design.md#reading) and the page's files under /reader/. Registered
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
    async (request, reply) => {
      if (!page) {
        const message = 'The reader page is not built: run `npm run build` and restart the auth service';
        // The reader followed a link in a browser: a page, not an error object shown as raw JSON.
        if (!/\btext\/html\b/i.test(request.headers.accept ?? '')) throw new AppError('unavailable', 503, message);
        const error = errorObject(503, message, 'unavailable');
        request.log.error({ errorId: error.id }, message);
        return reply
          .code(503)
          .type('text/html; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
          .header('x-content-type-options', 'nosniff')
          .send(unavailablePage(error.id));
      }
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

/** The whole page when the reader page is missing: no script or style, so it needs nothing else. */
function unavailablePage(errorId: string): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="robots" content="noindex, nofollow"><title>Sealpost – please try again later</title></head><body>',
    '<h1>This message cannot be shown right now</h1>',
    '<p>Sealpost is being set up or updated. Please open the link from your email again in a few minutes.</p>',
    `<p><small>Reference: ${errorId}</small></p>`,
    '</body></html>',
  ].join('\n');
}
