import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Counter } from 'prom-client';
import { createRegistry } from './metrics.ts';
import { metricsText, startMetricsListener } from './metrics-listener.ts';

describe('the metrics listener', () => {
  const auth = createRegistry('auth');
  const seal = createRegistry('seal');
  for (const [registry, count] of [
    [auth, 2],
    [seal, 3],
  ] as const) {
    new Counter({ name: 'things_total', help: 'Things', registers: [registry] }).inc(count);
  }
  const listening = startMetricsListener({ host: '127.0.0.1', port: 0, registries: [auth, seal] });
  after(async () => (await listening).close());

  it("writes a family two services share once, with each service's samples under it", async () => {
    const text = await metricsText([auth, seal]);
    assert.equal(text.match(/^# TYPE things_total counter$/gm)?.length, 1);
    assert.equal(text.match(/^# HELP things_total Things$/gm)?.length, 1);
    assert.match(text, /^things_total\{service="auth"\} 2$/m);
    assert.match(text, /^things_total\{service="seal"\} 3$/m);
    // Every sample follows its own family's TYPE line, as Prometheus's parser requires.
    const families = text.split('\n\n');
    const things = families.find((family) => family.startsWith('# HELP things_total'))!;
    assert.equal(things.split('\n').filter(Boolean).length, 4);
  });

  it('answers GET /metrics on its own loopback port and nothing else', async () => {
    const { url } = await listening;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const answer = await fetch(`${url}/metrics`);
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(await answer.text(), /things_total\{service="seal"\} 3/);
    for (const path of ['/', '/healthz', '/readyz', '/v1/admin/queue', '/metrics/../v1/config'])
      assert.equal((await fetch(`${url}${path}`)).status, 404, path);
    assert.equal((await fetch(`${url}/metrics`, { method: 'POST' })).status, 404);
  });

  it('names METRICS_PORT when the port is taken', async () => {
    const { url } = await listening;
    const port = Number(new URL(url).port);
    await assert.rejects(startMetricsListener({ host: '127.0.0.1', port, registries: [auth] }), (error: Error) => {
      assert.match(error.message, new RegExp(`METRICS_PORT=${port}: the port is in use`));
      return true;
    });
  });
});
