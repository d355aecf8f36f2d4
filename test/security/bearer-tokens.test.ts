import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AuthHarness } from '../support/auth-harness.ts';
import { startThreeServices, type ThreeServices } from '../support/three-services.ts';
import { assertErrorObject, readBody } from '../support/fuzz.ts';
import { concretePath, routeTable, type RouteEntry } from '../support/route-table.ts';
import type { ServiceUnderTest } from '../support/services.ts';
import type { ServiceName } from '../../src/kernel/variables.ts';

/**
 * Who may call what. Every route of each app must match one of its patterns (first match wins): a route
 * added without an entry here fails the test until someone decides its guard.
 *   admin: Authorization: Bearer ADMIN_TOKEN; service: Bearer SERVICE_TOKEN; service-or-admin: either;
 *   session: the auth service's reader session (cookie, CSRF), never a bearer token; public: nobody.
 */
type Guard = 'public' | 'admin' | 'service' | 'service-or-admin' | 'session';

const OPERATIONS: Array<[RegExp, Guard]> = [
  [/^\/swagger(\/|$)/, 'public'],
  [/^\/openapi\.json$/, 'public'],
  [/^\/healthz$/, 'public'],
  [/^\/readyz$/, 'public'],
];

const GUARDS: Record<ServiceName, Array<[RegExp, Guard]>> = {
  exchange: [
    [/^\/v1\/config(\/|$)/, 'admin'],
    [/^\/v1\/messages\/:id\/status$/, 'service-or-admin'],
    [/^\/v1\/messages$/, 'service'],
    [/^\/v1\/admin\/queue(\/|$)/, 'admin'],
    ...OPERATIONS,
  ],
  seal: [
    [/^\/v1\/ipfs\/config$/, 'admin'],
    [/^\/v1\/seal$/, 'service'],
    [/^\/v1\/sealed\//, 'service'],
    [/^\/v1\/recipients\/:email\/sealed$/, 'service'],
    [/^\/v1\/recipients\/:email\/mobile$/, 'service'],
    [/^\/v1\/recipients\/numbers$/, 'service'],
    [/^\/v1\/admin\/contacts(\/:email)?$/, 'admin'],
    [/^\/v1\/admin\/unpinned$/, 'admin'],
    [/^\/v1\/admin\/copies$/, 'admin'],
    [/^\/v1\/admin\/keys(\/rotate)?$/, 'admin'],
    [/^\/v1\/admin\/sealed\/:id\/withdraw$/, 'admin'],
    [/^\/v1\/admin\/sealed\/:id\/trail$/, 'admin'],
    [/^\/v1\/senders\/:sender\/sealed(\/|$)/, 'service'],
    ...OPERATIONS,
  ],
  auth: [
    // Start a session for anyone: the reader page's first call, and the sender's page's.
    [/^\/v1\/config$/, 'public'],
    [/^\/v1\/sender\/config$/, 'public'],
    // Among them POST /v1/auth/sign-out-everywhere: every session of the person, by this session's CSRF token.
    [/^\/v1\//, 'session'],
    // GET /logout for anyone (a page, or nothing to end); POST /logout needs the session's CSRF token (csrf.test.ts).
    [/^\/logout$/, 'public'],
    [/^\/m\/:id$/, 'public'],
    // The sender's page: it signs in by its own API, which the session guard above covers.
    [/^\/sent$/, 'public'],
    // The reader page's static files (@fastify/static's wildcard).
    [/^(\/reader\/)?\*$/, 'public'],
    // The tab's icon.
    [/^\/favicon\.(svg|ico)$/, 'public'],
    ...OPERATIONS,
  ],
};

function guardOf(service: keyof typeof GUARDS, route: RouteEntry): Guard | undefined {
  return GUARDS[service].find(([pattern]) => pattern.test(route.path))?.[1];
}

interface Called {
  status: number;
  body: unknown;
  wwwAuthenticate: string | null;
}

async function call(baseUrl: string, route: RouteEntry, headers: Record<string, string>, query = ''): Promise<Called> {
  const withBody = !['GET', 'HEAD', 'DELETE'].includes(route.method);
  const response = await fetch(`${baseUrl}${concretePath(route.path)}${query}`, {
    method: route.method,
    headers: { ...headers, ...(withBody ? { 'content-type': 'application/json' } : {}) },
    body: withBody ? '{}' : undefined,
    redirect: 'manual',
    signal: AbortSignal.timeout(10_000),
  });
  return {
    status: response.status,
    body: route.method === 'HEAD' ? undefined : await readBody(response),
    wwwAuthenticate: response.headers.get('www-authenticate'),
  };
}

describe('admin and service endpoints: every route of B and C refuses a missing, wrong or other token with 401', () => {
  let exchange: ServiceUnderTest;
  let all: ThreeServices;
  let seal: ServiceUnderTest;
  let harness: AuthHarness;

  before(async () => {
    all = await startThreeServices();
    ({ exchange, seal, harness } = all);
  });
  after(() => all?.stop());

  const services = () => ({ exchange, seal, auth: harness.auth });

  it('knows the expected guard of every route of the three services', () => {
    const unknown = (['exchange', 'seal', 'auth'] as const).flatMap((name) =>
      routeTable(services()[name].service.app)
        .filter((route) => guardOf(name, route) === undefined)
        .map((route) => `${name}: ${route.method} ${route.path}`),
    );
    assert.deepEqual(unknown, [], 'routes without an expected guard: decide one in GUARDS');
    // The table is not vacuous: the endpoints the design names are there, with their guards.
    const guards = (name: Exclude<ServiceName, 'auth'>, method: string, path: string) =>
      guardOf(name, { method, path });
    assert.equal(guards('exchange', 'POST', '/v1/config'), 'admin');
    assert.equal(guards('exchange', 'POST', '/v1/config/match'), 'admin');
    assert.equal(guards('exchange', 'POST', '/v1/messages'), 'service');
    assert.equal(guards('seal', 'POST', '/v1/ipfs/config'), 'admin');
    assert.equal(guards('seal', 'POST', '/v1/seal'), 'service');
  });

  for (const name of ['exchange', 'seal'] as const) {
    it(`${name}: refuses each guarded route with no, a wrong, the other or a misplaced token`, async () => {
      const service = services()[name];
      const tokens = { admin: service.adminToken, service: service.serviceToken };
      const guarded = routeTable(service.service.app).filter((route) => guardOf(name, route) !== 'public');
      assert.ok(guarded.length >= 5, `${name} has guarded routes: ${JSON.stringify(guarded)}`);
      for (const route of guarded) {
        const guard = guardOf(name, route)!;
        const right = guard === 'admin' ? tokens.admin : tokens.service;
        const refusals: Array<[string, Record<string, string>, string?]> = [
          ['no Authorization header', {}],
          ['a wrong token', { authorization: 'Bearer not-the-token' }],
          ['an empty bearer', { authorization: 'Bearer ' }],
          ['the right token with something after it', { authorization: `Bearer ${right}x` }],
          ['the right token twice', { authorization: `Bearer ${right} ${right}` }],
          [
            'the right token as Basic credentials',
            { authorization: `Basic ${Buffer.from(`${guard}:${right}`).toString('base64')}` },
          ],
          ['the right token without the scheme', { authorization: right }],
          [
            'the right token in the query string',
            {},
            `?access_token=${encodeURIComponent(right)}&token=${encodeURIComponent(right)}`,
          ],
          ['the right token in a cookie', { cookie: `token=${right}; authorization=Bearer%20${right}` }],
        ];
        if (guard !== 'service-or-admin') {
          refusals.push([
            'the other token',
            { authorization: `Bearer ${guard === 'admin' ? tokens.service : tokens.admin}` },
          ]);
        }
        for (const [label, headers, query] of refusals) {
          const what = `${name} ${route.method} ${route.path} (${guard}) with ${label}`;
          const answer = await call(service.url, route, headers, query);
          assert.equal(answer.status, 401, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
          assert.match(answer.wwwAuthenticate ?? '', /^Bearer/, `${what}: WWW-Authenticate`);
          if (route.method !== 'HEAD') {
            assertErrorObject(401, answer.body, what);
            assert.equal((answer.body as { errorCode?: string }).errorCode, 'unauthenticated', what);
          }
        }
        // And the guard is the one the table says: the right token gets past it (to validation, a 404, or an answer).
        const accepted = guard === 'service-or-admin' ? [tokens.service, tokens.admin] : [right];
        for (const token of accepted) {
          const answer = await call(service.url, route, { authorization: `Bearer ${token}` });
          assert.ok(
            ![401, 403].includes(answer.status),
            `${name} ${route.method} ${route.path} with the right token: ` +
              `${answer.status} ${JSON.stringify(answer.body)}`,
          );
        }
      }
    });
  }

  it('auth: no route lets a bearer token stand in for a reader session', async () => {
    const routes = routeTable(harness.auth.service.app).filter((route) => guardOf('auth', route) === 'session');
    assert.ok(routes.length >= 10, JSON.stringify(routes));
    for (const route of routes) {
      for (const token of [harness.auth.adminToken, harness.auth.serviceToken]) {
        const answer = await call(harness.auth.url, route, { authorization: `Bearer ${token}`, 'x-csrf-token': token });
        const what = `auth ${route.method} ${route.path} with a bearer token and no session`;
        assert.ok([401, 403].includes(answer.status), `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
        if (route.method !== 'HEAD') assertErrorObject(answer.status, answer.body, what);
      }
    }
  });

  it('answers the public routes without any token', async () => {
    for (const [name, service] of Object.entries(services()) as Array<[ServiceName, ServiceUnderTest]>) {
      for (const route of routeTable(service.service.app).filter(
        (entry) => guardOf(name, entry) === 'public' && entry.method === 'GET',
      )) {
        const answer = await call(service.url, route, {});
        assert.notEqual(answer.status, 401, `${name} GET ${route.path}`);
      }
    }
  });
});
