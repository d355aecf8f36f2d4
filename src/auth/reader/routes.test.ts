import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpServer, type App } from '../../kernel/http.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createRegistry } from '../../kernel/metrics.ts';
import { readerPageRoutes } from './routes.ts';
import { captureLogs } from '../../../test/support/capture-logs.ts';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('GET /m/{id} when the reader page could not be built', () => {
  let app: App;
  const { lines: logLines, stream: sink } = captureLogs();

  before(async () => {
    app = await createHttpServer({
      service: 'auth',
      title: 'test',
      description: 'test',
      logger: createLogger({ level: 'info' }, sink),
      registry: createRegistry('test'),
      readiness: {},
    });
    await app.register(readerPageRoutes, { page: undefined });
    await app.ready();
  });

  after(async () => {
    await app.close();
  });

  it('answers a browser with a short HTML page (503) whose reference is in the log, never raw JSON', async () => {
    const response = await app.inject({ method: 'GET', url: '/m/abc123', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(response.statusCode, 503);
    assert.match(response.headers['content-type'] as string, /^text\/html; charset=utf-8/);
    assert.match(response.headers['content-security-policy'] as string, /default-src 'none'/);
    assert.match(response.body, /^<!doctype html>/);
    assert.match(response.body, /<h1>This message cannot be shown right now<\/h1>/);
    assert.doesNotMatch(response.body, /[{}]|"kind"|npm run build/, 'no error object and no operator hint on the page');
    const reference = /Reference: ([0-9a-f-]{36})/.exec(response.body)?.[1];
    assert.ok(reference, response.body);
    assert.ok(
      logLines.some((line) => line.errorId === reference),
      'the reference names a log line',
    );
  });

  it('answers other clients with the error object', async () => {
    for (const accept of ['application/json', '*/*', undefined]) {
      const response = await app.inject({ method: 'GET', url: '/m/abc123', headers: accept ? { accept } : {} });
      assert.equal(response.statusCode, 503, String(accept));
      assert.match(response.headers['content-type'] as string, /^application\/json/);
      const body = response.json() as Record<string, unknown>;
      assert.equal(body.kind, 503);
      assert.equal(body.errorCode, 'unavailable');
      assert.equal(typeof body.id, 'string');
    }
  });
});
