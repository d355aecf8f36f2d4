import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpServer, type App } from '../../kernel/http.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createRegistry } from '../../kernel/metrics.ts';
import { SENDER_PAGE } from './assets.ts';
import { readerErrorPage, readerPageRoutes, SENDER_CSP } from './routes.ts';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const SENDER_HTML =
  '<!doctype html><html><head><title>Sealpost</title></head><body><main id="sender"></main></body></html>';

/** GET /sent: the sender's page of dist/reader, with its own policy; its file only there, never under /reader/. */
describe("GET /sent, the sender's page", () => {
  let app: App;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-sender-page-'));
    await writeFile(join(dir, 'index.html'), '<!doctype html><main id="reader"></main>');
    await writeFile(join(dir, SENDER_PAGE), SENDER_HTML);
    app = await createHttpServer({
      service: 'auth',
      title: 'test',
      description: 'test',
      logger: createLogger({ level: 'silent' }),
      registry: createRegistry('test'),
      readiness: {},
      browserPage: readerErrorPage,
    });
    await app.register(readerPageRoutes, { page: { dir } });
    await app.ready();
  });

  after(async () => {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the sender page with a policy that loads only our files and allows no image from elsewhere', async () => {
    const response = await app.inject({ method: 'GET', url: '/sent', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, SENDER_HTML);
    assert.match(response.headers['content-type'] as string, /^text\/html; charset=utf-8/);
    const csp = response.headers['content-security-policy'] as string;
    assert.equal(csp, SENDER_CSP);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /https:/);
    assert.equal(response.headers['x-frame-options'], 'DENY');
    assert.equal(response.headers['referrer-policy'], 'no-referrer');
    assert.equal(response.headers['cache-control'], 'no-cache');
  });

  it('serves its file only at /sent, not as a file under /reader/', async () => {
    const response = await app.inject({ method: 'GET', url: `/reader/${SENDER_PAGE}` });
    assert.notEqual(response.statusCode, 200);
  });
});

describe('GET /sent when the pages could not be built', () => {
  let app: App;
  before(async () => {
    app = await createHttpServer({
      service: 'auth',
      title: 'test',
      description: 'test',
      logger: createLogger({ level: 'silent' }),
      registry: createRegistry('test'),
      readiness: {},
    });
    await app.register(readerPageRoutes, { page: undefined });
    await app.ready();
  });
  after(async () => app.close());

  it('answers a browser with a short HTML page (503), and an API client with the error object', async () => {
    const page = await app.inject({ method: 'GET', url: '/sent', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(page.statusCode, 503);
    assert.match(page.headers['content-type'] as string, /^text\/html/);
    assert.doesNotMatch(page.body, /npm run build/);
    const api = await app.inject({ method: 'GET', url: '/sent', headers: { accept: 'application/json' } });
    assert.equal(api.statusCode, 503);
    assert.equal(api.json().errorCode, 'unavailable');
  });
});
