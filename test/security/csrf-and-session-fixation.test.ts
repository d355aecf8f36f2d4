import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { assertError } from '../support/auth-assert.ts';
import { ALICE, signInAlice, startAuthHarness, type AuthHarness } from '../support/auth-harness.ts';
import { Reader } from '../support/auth-reader.ts';
import { assertErrorObject, readBody } from '../support/fuzz.ts';
import { concretePath, routeTable, type RouteEntry } from '../support/route-table.ts';

/**
 * What src/auth/sessions/csrf.test.ts does not cover: the requests a foreign page can make a browser send
 * without any preflight (form posts: text/plain, urlencoded, multipart), the token anywhere but its
 * header, method overrides, CORS; and session fixation from the attacker's side.
 */
const EVIL = 'https://evil.example';
const STATE_CHANGING = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);

describe('CSRF beyond the token check: cross-origin form posts, misplaced tokens, method overrides, CORS', () => {
  let harness: AuthHarness;
  let messageId: string;
  let victim: Reader;
  let routes: RouteEntry[];

  before(async () => {
    harness = await startAuthHarness({ env: { SMS_LIMIT_NUMBER_INTERVAL: '0s' } });
    messageId = harness.sealSample().id;
    victim = harness.reader();
    await signInAlice(harness, victim, messageId);
    const saved = await victim.request('PUT', '/v1/message/reply', { body: { text: "the victim's own draft" } });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    routes = routeTable(harness.auth.service.app).filter((route) => STATE_CHANGING.has(route.method));
  });
  after(async () => {
    await harness?.stop();
  });

  /** A request as the victim's browser would send it for a foreign page: the cookie, but never the header. */
  async function forged(
    route: RouteEntry,
    contentType: string,
    body: string,
    extra: Record<string, string> = {},
    query = '',
  ) {
    const response = await fetch(
      `${harness.auth.url}${concretePath(route.path, '00000000-0000-4000-8000-000000000000')}${query}`,
      {
        method: route.method,
        headers: {
          cookie: victim.cookie!,
          origin: EVIL,
          referer: `${EVIL}/attack.html`,
          'content-type': contentType,
          ...extra,
        },
        body,
        redirect: 'manual',
      },
    );
    return { status: response.status, body: await readBody(response) };
  }

  function assertCsrfRefusal(answer: { status: number; body: unknown }, what: string) {
    assert.equal(answer.status, 403, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
    assertErrorObject(403, answer.body, what);
    assert.equal((answer.body as { errorCode: string }).errorCode, 'csrf_token_invalid', what);
  }

  /** Nothing the forged requests aimed at happened: no SMS, the draft as it was, still signed in. */
  async function assertNothingChanged(smsBefore: number) {
    assert.equal(harness.sms.messages.length, smsBefore, 'no SMS was sent');
    const draft = await victim.get('/v1/message/reply');
    assert.equal(draft.status, 200, 'the victim is still signed in');
    assert.equal(draft.body.text, "the victim's own draft");
    assert.deepEqual(draft.body.files, []);
  }

  it('refuses form posts from another origin on every state-changing route, whatever the content type', async () => {
    const smsBefore = harness.sms.messages.length;
    const json = JSON.stringify({
      messageId,
      email: ALICE.email,
      mobile: '+41797654321',
      method: 'sms',
      code: '000000',
      text: 'forged',
      mobile2: '=',
    });
    const bodies: Array<[string, string]> = [
      // The classic: JSON smuggled in a text/plain form (enctype="text/plain" gives `name=value`).
      ['text/plain', json],
      ['text/plain', `${json.slice(0, -1)}, "x":"=1"}`],
      ['text/plain;charset=UTF-8', json],
      [
        'application/x-www-form-urlencoded',
        `messageId=${messageId}&email=${ALICE.email}&method=sms&mobile=%2B41797654321&text=forged&x-csrf-token=x`,
      ],
      [
        'multipart/form-data; boundary=b',
        `--b\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\n\r\nforged\r\n--b--\r\n`,
      ],
    ];
    for (const route of routes) {
      for (const [contentType, body] of bodies) {
        assertCsrfRefusal(
          await forged(route, contentType, body),
          `${route.method} ${route.path} as ${contentType} from ${EVIL}`,
        );
      }
    }
    await assertNothingChanged(smsBefore);
  });

  it('takes the token from the X-CSRF-Token header only: not the body, query, a cookie or another header', async () => {
    const smsBefore = harness.sms.messages.length;
    const token = victim.csrf!;
    const body = JSON.stringify({ text: 'forged', 'x-csrf-token': token, csrf: token, _csrf: token, csrfToken: token });
    const places: Array<[string, Record<string, string>, string]> = [
      ['the body', {}, ''],
      ['the query string', {}, `?x-csrf-token=${token}&_csrf=${token}&csrf=${token}`],
      ['a cookie', { cookie: `${victim.cookie}; X-CSRF-Token=${token}; csrf=${token}` }, ''],
      ['X-XSRF-Token', { 'x-xsrf-token': token }, ''],
      ['X-CSRFToken', { 'x-csrftoken': token }, ''],
      ['CSRF-Token', { 'csrf-token': token }, ''],
    ];
    for (const route of routes) {
      for (const [place, headers, query] of places) {
        assertCsrfRefusal(
          await forged(route, 'application/json', body, headers, query),
          `${route.method} ${route.path} with the token in ${place}`,
        );
      }
    }
    await assertNothingChanged(smsBefore);
  });

  it('does not let a method override turn a POST into a safe method', async () => {
    const smsBefore = harness.sms.messages.length;
    for (const route of routes) {
      for (const [headers, query] of [
        [{ 'x-http-method-override': 'GET' }, ''],
        [{ 'x-http-method': 'GET' }, ''],
        [{ 'x-method-override': 'HEAD' }, ''],
        [{}, '?_method=GET'],
      ] as Array<[Record<string, string>, string]>) {
        assertCsrfRefusal(
          await forged(route, 'application/json', '{"text":"forged"}', headers, query),
          `${route.method} ${route.path} with ${JSON.stringify(headers)}${query}`,
        );
      }
    }
    await assertNothingChanged(smsBefore);
  });

  it('grants no CORS: a foreign page can neither read the token nor preflight the header', async () => {
    const config = await fetch(`${harness.auth.url}/v1/config?messageId=${messageId}`, {
      headers: { cookie: victim.cookie!, origin: EVIL },
    });
    assert.equal(config.status, 200);
    assert.equal(config.headers.get('access-control-allow-origin'), null);
    assert.equal(config.headers.get('access-control-allow-credentials'), null);
    assert.equal(config.headers.get('access-control-expose-headers'), null);
    for (const path of ['/v1/auth/code', '/v1/message/reply', '/v1/message/files']) {
      const preflight = await fetch(`${harness.auth.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: EVIL,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, x-csrf-token',
        },
      });
      assert.equal(preflight.headers.get('access-control-allow-origin'), null, path);
      assert.equal(preflight.headers.get('access-control-allow-headers'), null, path);
      assert.ok(preflight.status >= 400, `${path}: the preflight is not granted (${preflight.status})`);
      await preflight.arrayBuffer();
    }
  });
});

describe('session fixation: a session id an attacker knows before sign-in is worth nothing after it', () => {
  let harness: AuthHarness;
  let messageId: string;

  before(async () => {
    harness = await startAuthHarness({ env: { SMS_LIMIT_NUMBER_INTERVAL: '0s' } });
    messageId = harness.sealSample().id;
  });
  after(async () => {
    await harness?.stop();
  });

  for (const rememberMe of [false, true]) {
    it(`rotates a session planted in the victim's browser (keep me signed in: ${rememberMe})`, async () => {
      // The attacker opens a session of their own and plants its cookie in the victim's browser.
      const attacker = harness.reader();
      await attacker.get(`/v1/config?messageId=${messageId}`);
      const planted = { cookie: attacker.cookie!, csrf: attacker.csrf! };
      const victim = harness.reader();
      victim.cookie = planted.cookie;

      // The victim uses it as it is (the server knows it: no new cookie yet), then signs in.
      const config = await victim.get(`/v1/config?messageId=${messageId}`);
      assert.equal(config.setCookie, undefined, 'the planted session was taken as it is before sign-in');
      const verified = await signInAlice(harness, victim, messageId, rememberMe);
      assert.ok(verified.setCookie, 'sign-in sets a new cookie');
      assert.notEqual(victim.cookie, planted.cookie, 'the session id after sign-in is not the planted one');
      assert.notEqual(victim.csrf, planted.csrf, 'nor is its CSRF token');
      assert.equal((await victim.get('/v1/message')).status, 200);

      // What the attacker holds opens nothing: not the message, not the draft, not a state change.
      const stale = harness.reader();
      stale.cookie = planted.cookie;
      stale.csrf = planted.csrf;
      assertError(await stale.get('/v1/message'), 401, 'unauthenticated');
      assertError(await stale.get('/v1/message/files'), 401, 'unauthenticated');
      assertError(
        await stale.request('PUT', '/v1/message/reply', { body: { text: 'attacker' }, csrf: planted.csrf }),
        403,
        'csrf_token_invalid',
      );
      const restarted = await stale.get(`/v1/config?messageId=${messageId}`);
      assert.equal(restarted.body.signedIn, false);
      assert.ok(restarted.setCookie, 'the stale id is unknown: a fresh session is started');
      assert.notEqual(stale.cookie, victim.cookie);
      assert.equal((await victim.get('/v1/message/reply')).body.text, '', "the victim's draft is untouched");
    });
  }

  it('never adopts a session id it did not issue', async () => {
    const invented = `sealpost_session=${randomBytes(32).toString('base64url')}`;
    const victim = harness.reader();
    victim.cookie = invented;
    const config = await victim.get(`/v1/config?messageId=${messageId}`);
    assert.ok(config.setCookie, 'a new session is issued');
    assert.notEqual(victim.cookie, invented);
    await signInAlice(harness, victim, messageId);
    assert.notEqual(victim.cookie, invented);
    const attacker = new Reader(harness.auth.url);
    attacker.cookie = invented;
    assertError(await attacker.get('/v1/message'), 401, 'unauthenticated');
  });

  it('rotates again on a second sign-in in the same browser: the id of the first is dead', async () => {
    const reader = harness.reader();
    await signInAlice(harness, reader, messageId);
    const first = reader.cookie!;
    await signInAlice(harness, reader, messageId);
    assert.notEqual(reader.cookie, first);
    const old = harness.reader();
    old.cookie = first;
    assertError(await old.get('/v1/message'), 401, 'unauthenticated');
  });
});
