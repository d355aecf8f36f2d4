import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorObject } from '../../kernel/errors.ts';
import { BROWSER_PAGE_CSP, type App } from '../../kernel/http.ts';
import { MESSAGE_ID_PATTERN } from '../seal/client.ts';
import { SENDER_PAGE } from './assets.ts';

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

/**
 * The sender's page shows no message content and no frame: no image from elsewhere either. Its trail links are
 * same-origin downloads.
 */
export const SENDER_CSP = READER_CSP.replace("img-src 'self' data: https:", "img-src 'self' data:");

const HASHED_ASSET = /-[A-Z0-9]{8}\.(js|css|map)$/;

/**
 * GET /m/{id} (the reader link, docs/design.md#reading), GET /sent (the sender's page, docs/sender.md) and the
 * pages' files under /reader/. Registered
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
        description:
          'The same page for every id; it reads the id from its address and calls GET /v1/config?messageId={id}.',
        params: Type.Object({ id: Type.String({ maxLength: 200 }) }),
      },
    },
    async (request, reply) => {
      // Not an id of ours (a link cut short or run together with other text): say so on a page of its own.
      if (!MESSAGE_ID.test(request.params.id) && acceptsHtml(request)) {
        const error = errorObject(404, 'No sealed message can have this id', 'not_found');
        request.log.info({ errorId: error.id }, 'reader link with an id that cannot be a message');
        return sendPage(reply, 404, readerErrorPage(request, 404, error.id)!);
      }
      if (!page) {
        const message = 'The reader page is not built: run `npm run build` and restart the auth service';
        // The reader followed a link in a browser: a page, not an error object shown as raw JSON.
        if (!acceptsHtml(request)) throw new AppError('unavailable', 503, message);
        const error = errorObject(503, message, 'unavailable');
        request.log.error({ errorId: error.id }, message);
        return sendPage(reply, 503, unavailablePage(error.id));
      }
      return sendBuiltPage(reply, page.dir, 'index.html', READER_CSP);
    },
  );

  app.get(
    '/sent',
    {
      schema: {
        tags: ['reader'],
        summary: "The sender's page (HTML): sign in with a code by email, see and steer the messages one sealed",
        description: 'It calls the /v1/sender/* routes (docs/sender.md).',
      },
    },
    async (request, reply) => {
      if (!page) {
        const message = "The sender's page is not built: run `npm run build` and restart the auth service";
        if (!acceptsHtml(request)) throw new AppError('unavailable', 503, message);
        const error = errorObject(503, message, 'unavailable');
        request.log.error({ errorId: error.id }, message);
        return sendPage(reply, 503, unavailablePage(error.id));
      }
      return sendBuiltPage(reply, page.dir, SENDER_PAGE, SENDER_CSP);
    },
  );

  // The tab's icon (index.html links the SVG; browsers ask for /favicon.ico on other pages by themselves).
  for (const path of ['/favicon.svg', '/favicon.ico']) {
    app.get(path, { schema: { hide: true } }, async (_request, reply) =>
      reply
        .type('image/svg+xml')
        .header('cache-control', 'public, max-age=86400')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'")
        .send(FAVICON_SVG),
    );
  }

  if (!page) return;
  await app.register(fastifyStatic, {
    root: page.dir,
    prefix: '/reader/',
    decorateReply: false,
    index: false,
    // The pages themselves only at /m/{id} and /sent, with their policy headers.
    allowedPath: (path) => path !== '/index.html' && path !== `/${SENDER_PAGE}`,
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

const MESSAGE_ID = new RegExp(MESSAGE_ID_PATTERN);

/** The sealed envelope of the page header, as the tab's icon. */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">' +
  '<rect x="4" y="12" width="56" height="40" rx="6" fill="#1d4ed8"/>' +
  '<path d="M8 18l24 18 24-18" fill="none" stroke="#fff" stroke-width="5" stroke-linejoin="round"/>' +
  '<circle cx="48" cy="46" r="11" fill="#b91c1c" stroke="#fff" stroke-width="3"/>' +
  '</svg>';

function acceptsHtml(request: FastifyRequest): boolean {
  return /\btext\/html\b/i.test(request.headers.accept ?? '');
}

/** A page of dist/reader with its policy headers; read each time (a few KB): after a rebuild it names the new files. */
async function sendBuiltPage(reply: FastifyReply, dir: string, file: string, csp: string) {
  const html = await readFile(join(dir, file), 'utf8');
  return reply
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=()')
    .send(html);
}

function sendPage(reply: FastifyReply, status: number, html: string) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', BROWSER_PAGE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .send(html);
}

/**
 * The auth service's answer to a browser that opened an address it has no page for (http.ts
 * BrowserPage): a short page with a sentence instead of a raw error object. API paths (/v1/…) and
 * clients that do not ask for HTML keep the error object.
 */
export function readerErrorPage(request: FastifyRequest, status: number, errorId: string): string | undefined {
  if ((request.method !== 'GET' && request.method !== 'HEAD') || !acceptsHtml(request)) return undefined;
  const path = request.url.split('?')[0] ?? '';
  if (path === '/v1' || path.startsWith('/v1/')) return undefined;
  const [title, sentence] =
    status === 414
      ? [
          'This link is too long',
          'It is longer than any Sealpost link. Please open the link from your email again, or copy all of it at once.',
        ]
      : status === 404
        ? [
            'There is no message at this address',
            'Please open the link from your email again. ' +
              'If it still does not work, the link may be incomplete: ask the sender.',
          ]
        : ['This link is not valid', 'Please open the link from your email again.'];
  return simplePage(title, sentence, errorId);
}

/** The whole page when the reader page is missing: no script or style, so it needs nothing else. */
function unavailablePage(errorId: string): string {
  return simplePage(
    'This message cannot be shown right now',
    'Sealpost is being set up or updated. Please open the link from your email again in a few minutes.',
    errorId,
    'Sealpost – please try again later',
  );
}

function simplePage(heading: string, sentence: string, errorId: string, title = `${heading} – Sealpost`): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="robots" content="noindex, nofollow"><title>${title}</title><link ` +
      'rel="icon" href="/favicon.svg" type="image/svg+xml"></head><body>',
    // In <main>: assistive technology finds the page's content by its landmark (axe, region).
    `<main><h1>${heading}</h1>`,
    `<p>${sentence}</p>`,
    `<p><small>Reference: ${errorId}</small></p></main>`,
    '</body></html>',
  ].join('\n');
}
