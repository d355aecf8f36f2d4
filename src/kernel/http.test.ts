import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { AppError } from './errors.ts';
import { createHttpServer, type App } from './http.ts';
import { createLogger } from './logger.ts';
import { createRegistry } from './metrics.ts';
import type { Registry } from 'prom-client';
import { captureLogs } from '../../test/support/capture-logs.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('HTTP server factory', () => {
  let app: App;
  let registry: Registry;
  const { lines: logLines, stream: sink } = captureLogs();
  let storeUp = true;

  before(async () => {
    registry = createRegistry('test');
    app = await createHttpServer({
      service: 'test',
      title: 'test',
      description: 'test',
      logger: createLogger({ level: 'info' }, sink),
      registry,
      bodyLimit: 1024,
      readiness: {
        database: async () => {},
        objects: async () => {
          if (!storeUp) throw new Error('connect ECONNREFUSED');
        },
      },
    });
    app.post(
      '/v1/clusters',
      {
        schema: {
          body: Type.Object(
            {
              clusters: Type.Array(
                Type.Object(
                  {
                    host: Type.String({ minLength: 1 }),
                    timeout: Type.Optional(Type.String({ pattern: '^[0-9]+s$' })),
                  },
                  { additionalProperties: false },
                ),
                { minItems: 1 },
              ),
            },
            { additionalProperties: false },
          ),
        },
      },
      async () => ({ ok: true }),
    );
    app.get('/things/:id', async (request) => {
      const { id } = request.params as { id: string };
      if (id === 'limited')
        throw new AppError('sms_rate_limit', 429, 'Too many SMS', { headers: { 'retry-after': '60' } });
      if (id === 'broken')
        throw new Error('duplicate key value violates unique constraint "users_pkey" SELECT * FROM users');
      return { id };
    });
    await app.ready();
  });
  after(() => app.close());

  it('answers validation failures with a 400 error object that names the field as the client wrote it', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/clusters',
      payload: { clusters: [{ host: 'a' }, { host: 'b', timeout: '5m' }] },
    });
    assert.equal(res.statusCode, 400);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['errorCode', 'id', 'kind', 'message']);
    assert.equal(body.kind, 400);
    assert.equal(body.errorCode, 'validation_failed');
    assert.match(body.id, UUID);
    assert.match(body.message, /^clusters\[1\]\.timeout must match pattern/);
  });

  it('names a missing and an unknown field', async () => {
    const missing = await app.inject({ method: 'POST', url: '/v1/clusters', payload: { clusters: [{}] } });
    assert.equal(missing.json().message, 'clusters[0].host is required');
    const unknown = await app.inject({
      method: 'POST',
      url: '/v1/clusters',
      payload: { clusters: [{ host: 'a', prot: 1 }] },
    });
    assert.equal(unknown.json().message, 'clusters[0].prot is not a known field');
  });

  it('turns an AppError into its status, errorCode and headers', async () => {
    const res = await app.inject({ method: 'GET', url: '/things/limited' });
    assert.equal(res.statusCode, 429);
    assert.equal(res.headers['retry-after'], '60');
    const body = res.json();
    assert.deepEqual(
      { kind: body.kind, errorCode: body.errorCode, message: body.message },
      { kind: 429, errorCode: 'sms_rate_limit', message: 'Too many SMS' },
    );
  });

  it('answers unknown routes with a 404 error object', async () => {
    const res = await app.inject({ method: 'DELETE', url: '/nowhere?x=1' });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().kind, 404);
    assert.equal(res.json().message, 'No route DELETE /nowhere');
  });

  it('hides internal errors: no stack, no SQL, a reference id that is in the log', async () => {
    const res = await app.inject({ method: 'GET', url: '/things/broken' });
    assert.equal(res.statusCode, 500);
    const body = res.json();
    assert.doesNotMatch(res.body, /SELECT|users_pkey|at .*\.ts/);
    assert.equal(body.message, `Internal error (reference ${body.id})`);
    const line = logLines.find((l) => l.errorId === body.id);
    assert.ok(line, 'the error id is in the log line of the request');
    assert.match(JSON.stringify(line), /users_pkey/, 'the log has the real cause');
    assert.equal(line.reqId, res.headers['x-request-id']);
  });

  it('gives every occurrence its own id', async () => {
    const [a, b] = await Promise.all([app.inject('/nowhere'), app.inject('/nowhere')]);
    assert.notEqual(a.json().id, b.json().id);
  });

  it('answers malformed JSON and oversized bodies with error objects', async () => {
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/clusters',
      headers: { 'content-type': 'application/json' },
      payload: '{"clusters": [',
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().kind, 400);
    const big = await app.inject({
      method: 'POST',
      url: '/v1/clusters',
      payload: { clusters: [{ host: 'x'.repeat(2000) }] },
    });
    assert.equal(big.statusCode, 413);
    assert.equal(big.json().errorCode, 'payload_too_large');
  });

  it('refuses a JSON body that is not UTF-8 with 400 validation_failed, and takes UTF-8 as it is', async () => {
    for (const bytes of [
      Buffer.from([0xff, 0xfe]), // never in UTF-8
      Buffer.from('\xe9', 'latin1'), // Latin-1 é
      Buffer.from([0xc3]), // a sequence cut short
      Buffer.from([0xed, 0xa0, 0x80]), // an encoded surrogate
    ]) {
      const payload = Buffer.concat([Buffer.from('{"clusters": [{"host": "a'), bytes, Buffer.from('"}]}')]);
      const bad = await app.inject({
        method: 'POST',
        url: '/v1/clusters',
        headers: { 'content-type': 'application/json; charset=utf-8' },
        payload,
      });
      assert.equal(bad.statusCode, 400, bytes.toString('hex'));
      assert.equal(bad.json().errorCode, 'validation_failed');
      assert.match(bad.json().message, /not valid UTF-8/);
    }
    const good = await app.inject({
      method: 'POST',
      url: '/v1/clusters',
      headers: { 'content-type': 'application/json' },
      payload: Buffer.from('{"clusters": [{"host": "zürich-ß-😀"}]}'),
    });
    assert.equal(good.statusCode, 200);
    const poisoned = await app.inject({
      method: 'POST',
      url: '/v1/clusters',
      headers: { 'content-type': 'application/json' },
      payload: '{"clusters": [{"host": "a"}], "__proto__": {"x": 1}}',
    });
    assert.equal(poisoned.statusCode, 400, 'prototype poisoning is still refused');
    const empty = await app.inject({
      method: 'POST',
      url: '/v1/clusters',
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    assert.equal(empty.statusCode, 400);
  });

  it("answers the router's refusals (bad percent-encoding, over-long path parameter) with logged errors", async () => {
    logLines.length = 0;
    const badUrl = await app.inject({ method: 'GET', url: '/x/%E0%A4%A' });
    const longParam = await app.inject({ method: 'GET', url: `/things/${'a'.repeat(201)}` });
    for (const [res, status, message] of [
      [badUrl, 400, 'The URL is not valid: a percent-encoded part does not decode'],
      [longParam, 414, 'A part of the URL path is longer than the server accepts'],
    ] as const) {
      assert.equal(res.statusCode, status);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['errorCode', 'id', 'kind', 'message']);
      assert.deepEqual([body.kind, body.errorCode, body.message], [status, 'validation_failed', message]);
      assert.match(body.id, UUID);
      assert.doesNotMatch(res.body, /FST_ERR/);
      const line = logLines.find((l) => l.errorId === body.id);
      assert.ok(line, `the error id of the ${status} is in the log`);
      assert.equal(line.status, status);
      assert.equal(line.reqId, res.headers['x-request-id'], 'the log line carries the request id the client got');
    }
  });

  it('reports readiness per dependency', async () => {
    const ready = await app.inject('/readyz');
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ready', checks: { database: 'ok', objects: 'ok' } });
    storeUp = false;
    const down = await app.inject('/readyz');
    storeUp = true;
    assert.equal(down.statusCode, 503);
    assert.equal(down.json().message, 'Not ready: objects unreachable');
    assert.equal((await app.inject('/healthz')).json().status, 'ok');
  });

  it('counts requests by route pattern, never by raw URL', async () => {
    await app.inject('/things/123');
    await app.inject('/things/456');
    const text = await registry.metrics();
    assert.match(text, /http_requests_total\{operation="GET \/things\/:id",code="200",service="test"\} 2/);
    assert.match(text, /http_requests_total\{operation="unmatched",code="404",service="test"\}/);
    assert.match(
      text,
      /http_request_duration_seconds_bucket\{le="0.005",service="test",operation="GET \/things\/:id",code="200"\}/,
    );
    assert.doesNotMatch(text, /things\/123/);
    assert.match(text, /process_resident_memory_bytes/);
  });

  it('serves no /metrics on the service port (the metrics listener does)', async () => {
    assert.equal((await app.inject('/metrics')).statusCode, 404);
  });

  it('describes its routes in OpenAPI 3 from the same schemas', async () => {
    const spec = (await app.inject('/openapi.json')).json();
    assert.equal(spec.openapi, '3.0.3');
    assert.ok(spec.paths['/v1/clusters'].post.requestBody);
    const ui = await app.inject('/swagger/');
    assert.equal(ui.statusCode, 200);
    assert.match(ui.body, /swagger/i);
  });

  it('keeps secrets out of the logs', async () => {
    logLines.length = 0;
    app.log.info(
      { req: { headers: { authorization: 'Bearer s3cret-token', cookie: 'sid=abc' } }, code: '123456' },
      'probe',
    );
    const text = JSON.stringify(logLines);
    assert.doesNotMatch(text, /s3cret-token|sid=abc|123456/);
  });
});
