import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpServer, type App } from '../../kernel/http.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createRegistry } from '../../kernel/metrics.ts';
import { readerErrorPage, readerPageRoutes } from './routes.ts';
import { captureLogs } from '../../../test/support/capture-logs.ts';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const PAGE = '<!doctype html><html><head><title>Sealpost</title></head><body><main id="main"></main></body></html>';

/**
 * Every address a browser opens on the auth service answers a page, never raw JSON; the API keeps its error objects.
 */
describe('the reader link and other addresses opened in a browser', () => {
  let app: App;
  let dir: string;
  const { lines: logLines, stream: sink } = captureLogs();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-reader-pages-'));
    await writeFile(join(dir, 'index.html'), PAGE);
    app = await createHttpServer({
      service: 'auth',
      title: 'test',
      description: 'test',
      logger: createLogger({ level: 'info' }, sink),
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

  const browse = (url: string) => app.inject({ method: 'GET', url, headers: { accept: BROWSER_ACCEPT } });

  function assertPage(response: Awaited<ReturnType<typeof browse>>, status: number, heading: RegExp) {
    assert.equal(response.statusCode, status, response.body);
    assert.match(response.headers['content-type'] as string, /^text\/html; charset=utf-8/);
    assert.match(response.headers['content-security-policy'] as string, /default-src 'none'/);
    assert.match(response.body, /^<!doctype html>/);
    assert.match(response.body, heading);
    assert.match(response.body, /<p>[^<]*Please open the link from your email again/);
    assert.doesNotMatch(response.body, /[{}]|"kind"|errorCode/, 'no error object on the page');
    const reference = /Reference: ([0-9a-f-]{36})/.exec(response.body)?.[1];
    assert.ok(reference && logLines.some((line) => line.errorId === reference), 'the reference names a log line');
  }

  it('answers GET / with an HTML page (404) saying there is no message here', async () => {
    assertPage(await browse('/'), 404, /<h1>There is no message at this address<\/h1>/);
  });

  it('answers an unknown path under /m/ with an HTML page (404)', async () => {
    assertPage(await browse('/m/abc/def'), 404, /<h1>There is no message at this address<\/h1>/);
    assertPage(await browse('/m/'), 404, /<h1>There is no message at this address<\/h1>/);
  });

  it('answers an id longer than any message id with an HTML page, not the error object', async () => {
    // 129 characters: longer than a message id, within what the router takes.
    assertPage(await browse(`/m/${'a'.repeat(129)}`), 404, /<h1>There is no message at this address<\/h1>/);
    // Far longer: the router refuses the path part itself (414).
    assertPage(await browse(`/m/${'a'.repeat(600)}`), 414, /<h1>This link is too long<\/h1>/);
  });

  it('still serves the reader page for an id of the right shape', async () => {
    const response = await browse(`/m/${'a'.repeat(128)}`);
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, PAGE);
  });

  it('keeps the error object for API paths and for clients that do not ask for HTML', async () => {
    for (const [url, accept] of [
      ['/v1/nothing-here', BROWSER_ACCEPT],
      ['/', 'application/json'],
      [`/m/${'a'.repeat(600)}`, '*/*'],
    ] as const) {
      const response = await app.inject({ method: 'GET', url, headers: { accept } });
      assert.match(response.headers['content-type'] as string, /^application\/json/, url);
      const body = response.json() as Record<string, unknown>;
      assert.equal(body.kind, response.statusCode, url);
      assert.equal(typeof body.errorCode, 'string', url);
    }
  });

  it('serves a favicon (SVG) at /favicon.svg and /favicon.ico', async () => {
    for (const url of ['/favicon.svg', '/favicon.ico']) {
      const response = await app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 200, url);
      assert.equal(response.headers['content-type'], 'image/svg+xml');
      assert.match(response.body, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    }
  });
});
