import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../../../test/support/auth-assert.ts';
import { signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { concretePath as concrete, routeTable, type RouteEntry } from '../../../test/support/route-table.ts';

const STATE_CHANGING = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);

describe('CSRF: every POST, PUT and DELETE needs the session token in X-CSRF-Token', () => {
  let harness: AuthHarness;
  let reader: Reader;
  let other: Reader;
  let stateChanging: RouteEntry[];
  let record: ReturnType<AuthHarness['sealSample']>;

  before(async () => {
    harness = await startAuthHarness({ env: { SMS_LIMIT_NUMBER_INTERVAL: '0s' } });
    record = harness.sealSample();
    reader = harness.reader();
    await signInAlice(harness, reader, record.id);
    other = harness.reader();
    await other.get(`/v1/config?messageId=${record.id}`);
    stateChanging = routeTable(harness.auth.service.app).filter((route) => STATE_CHANGING.has(route.method));
  });
  after(async () => {
    await harness?.stop();
  });

  it('finds the state-changing routes in the route table', () => {
    const names = stateChanging.map((route) => `${route.method} ${route.path}`);
    for (const known of ['POST /v1/auth/code', 'POST /v1/auth/verify', 'PUT /v1/mobile', 'POST /v1/mobile/verify']) {
      assert.ok(names.includes(known), `${known} missing from ${names.join(', ')}`);
    }
  });

  it("refuses each with 403 and an error object: no token, a wrong one, another session's, no session", async () => {
    const anonymous = harness.reader();
    for (const route of stateChanging) {
      const url = concrete(route.path);
      const what = `${route.method} ${route.path}`;
      for (const [label, client, csrf] of [
        ['no token', reader, null],
        ['wrong token', reader, 'x'.repeat(43)],
        ["another session's token", reader, other.csrf!],
        ['no session', anonymous, reader.csrf!],
      ] as const) {
        const response = await client.request(route.method, url, { body: {}, csrf });
        assert.equal(
          response.status,
          403,
          `${what} with ${label}: ${response.status} ${JSON.stringify(response.body)}`,
        );
        assertError(response, 403, 'csrf_token_invalid');
      }
    }
  });

  it('checks the token before reading the body: a malformed body is still a 403', async () => {
    for (const route of stateChanging) {
      const response = await reader.request(route.method, concrete(route.path), { csrf: null, raw: '{"not json' });
      assertError(response, 403, 'csrf_token_invalid');
    }
  });

  it('lets each of them past the CSRF check with the right token', async () => {
    // Signing out ends the session whose token the others need: those go last, and the reader signs in again.
    const endsSession = (route: RouteEntry) => route.path === '/logout' || route.path.includes('sign-out');
    for (const route of [...stateChanging.filter((r) => !endsSession(r)), ...stateChanging.filter(endsSession)]) {
      if (endsSession(route)) await signInAlice(harness, reader, record.id);
      const response = await reader.request(route.method, concrete(route.path), { body: {} });
      assert.notEqual(response.body?.errorCode, 'csrf_token_invalid', `${route.method} ${route.path}`);
    }
    await signInAlice(harness, reader, record.id);
  });

  it('issues the token on GET /v1/message/files for a signed-in session, and it is accepted', async () => {
    const files = await reader.get('/v1/message/files');
    assert.equal(files.status, 200);
    assert.deepEqual(files.body.files, []);
    const token = files.headers.get('x-csrf-token');
    assert.match(token!, /^[A-Za-z0-9_-]{43}$/);
    const response = await reader.request('PUT', '/v1/mobile', { body: { mobile: 'not a number' }, csrf: token });
    assertError(response, 400, 'invalid_mobile');
  });
});
