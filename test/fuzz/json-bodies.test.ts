import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { signInAlice, type AuthHarness } from '../support/auth-harness.ts';
import type { Reader } from '../support/auth-reader.ts';
import { startThreeServices, type ThreeServices } from '../support/three-services.ts';
import { assertErrorObject, fetchWithin, fuzz, readBody } from '../support/fuzz.ts';
import type { ServiceUnderTest } from '../support/services.ts';

const RUNS_PER_ENDPOINT = 250;

// ---- Bodies: broken JSON, JSON of the wrong shape, and valid bodies with one thing changed. ----

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every path to a value inside a JSON value (objects and arrays), the root included. */
function paths(value: Json, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (value === null || typeof value !== 'object') return [prefix];
  const children = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [
    prefix,
    ...children.flatMap((key) => paths((value as Record<string | number, Json>)[key]!, [...prefix, key])),
  ];
}

/** A copy of `value` with `change` applied at `path`. */
function mutate(value: Json, path: Array<string | number>, change: (old: Json | undefined) => Json | undefined): Json {
  if (path.length === 0) return change(value) ?? null;
  const copy = structuredClone(value) as Record<string | number, Json>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, Json>;
  const last = path[path.length - 1]!;
  const next = change(parent[last]);
  if (next === undefined) {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else parent[last] = next;
  return copy as Json;
}

const strangeValue: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
  fc.constantFrom<Json>(
    '',
    ' ',
    '\u0000',
    'a\r\nX-Injected: 1',
    '\ud800',
    '💥'.repeat(300),
    -1,
    0,
    1e308,
    -0,
    2 ** 53 + 1,
    1.5,
    true,
    [],
    {},
    ['smtp', 'smtp'],
    'x'.repeat(5000),
  ),
);

/** A valid body with one field replaced, removed, wrapped, or an unknown field added beside it. */
function mutations(valid: Json): fc.Arbitrary<Json> {
  const all = paths(valid);
  return fc
    .tuple(
      fc.constantFrom(...all),
      fc.constantFrom('replace', 'remove', 'wrap', 'add'),
      strangeValue,
      fc.string({ maxLength: 12 }),
    )
    .map(([path, operation, value, key]) => {
      if (operation === 'replace') return mutate(valid, path, () => value);
      if (operation === 'remove') return mutate(valid, path, () => undefined);
      if (operation === 'wrap') return mutate(valid, path, (old) => [old ?? null]);
      return mutate(valid, path, (old) =>
        old !== null && typeof old === 'object' && !Array.isArray(old)
          ? { ...old, [key || 'extra']: value }
          : (old ?? null),
      );
    });
}

/** Text that is not JSON, or JSON meant to hurt a parser or a validator. */
const brokenText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom(
    '',
    ' ',
    'null',
    'true',
    '0',
    '"text"',
    '[]',
    '{',
    '}',
    '{"a":}',
    '{"a" 1}',
    "{'a':1}",
    '{"a":1,}',
    '[1,]',
    'NaN',
    'Infinity',
    '1e99999',
    '\ufeff{}',
    '{"__proto__":{"polluted":1}}',
    '{"constructor":{"prototype":{"polluted":1}}}',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
    '{"a":1,"a":2}',
    '{"a":"\\x41"}',
    `[${'"x",'.repeat(50_000)}"x"]`,
  ),
  fc.integer({ min: 1, max: 60_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  fc.integer({ min: 1, max: 30_000 }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
);

const CONTENT_TYPES = [
  'application/json',
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json;charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/vnd.api+json',
  'application/jsonx',
  undefined,
] as const;

interface JsonCase {
  body: string;
  contentType: string | undefined;
}

function bodies(valid: Json): fc.Arbitrary<JsonCase> {
  const text = fc.oneof(
    { weight: 5, arbitrary: mutations(valid).map((value) => JSON.stringify(value)) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)) },
    { weight: 3, arbitrary: brokenText },
    {
      weight: 1,
      arbitrary: fc.nat().map((cut) => {
        const whole = JSON.stringify(valid);
        return whole.slice(0, cut % whole.length);
      }),
    },
  );
  return fc.record({ body: text, contentType: fc.constantFrom(...CONTENT_TYPES) });
}

describe('fuzzing the JSON endpoints of the three services with random and malformed bodies', {
  timeout: 180_000,
}, () => {
  let exchange: ServiceUnderTest;
  let services: ThreeServices;
  let seal: ServiceUnderTest;
  let harness: AuthHarness;
  let messageId: string;
  let visitor: Reader;
  let alice: Reader;
  let ruleId: string;

  before(async () => {
    services = await startThreeServices({
      env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_NUMBER_HOURLY: '100000', SMS_LIMIT_IP_HOURLY: '100000' },
    });
    ({ exchange, seal, harness } = services);
    messageId = harness.sealSample().id;
    visitor = harness.reader();
    await visitor.get(`/v1/config?messageId=${messageId}`);
    alice = harness.reader();
    await signInAlice(harness, alice, messageId);
    const rule = await fetch(`${exchange.url}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${exchange.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'to be replaced',
        priority: 5000,
        configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
      }),
    });
    ruleId = ((await rule.json()) as { id: string }).id;
  });
  after(() => services?.stop());

  /**
   * First a sweep: the valid body with a NUL character added to each of its strings in turn is a 400
   * (PostgreSQL cannot store NUL: it used to surface as a 500). Then every generated body: the answer comes
   * within 10 s, is never a 5xx, and when it is a 4xx it is the error object. Then a valid body still
   * works and nothing leaked into Object.prototype.
   */
  async function fuzzEndpoint(options: {
    name: string;
    url: () => string;
    method?: string;
    headers: () => Record<string, string>;
    valid: Json;
    okStatus: number;
  }): Promise<void> {
    const stringPaths = paths(options.valid).filter(
      (path) =>
        typeof path.reduce<unknown>((value, key) => (value as Record<string | number, unknown>)[key], options.valid) ===
        'string',
    );
    assert.ok(stringPaths.length > 0);
    for (const path of stringPaths) {
      const body = JSON.stringify(mutate(options.valid, path, (old) => `${old as string}\u0000`));
      const response = await fetchWithin(options.url(), {
        method: options.method ?? 'POST',
        headers: { ...options.headers(), 'content-type': 'application/json' },
        body,
      });
      const context = `${options.name} with a NUL in ${path.join('.')}`;
      assert.equal(response.status, 400, `${context}: ${response.status}`);
      assertErrorObject(400, await readBody(response), context);
    }

    const outcomes = new Map<number, number>();
    await fuzz(`json ${options.name}`, bodies(options.valid), RUNS_PER_ENDPOINT, async ({ body, contentType }) => {
      const response = await fetchWithin(options.url(), {
        method: options.method ?? 'POST',
        headers: { ...options.headers(), ...(contentType ? { 'content-type': contentType } : {}) },
        body,
      });
      const answer = await readBody(response);
      const shown = JSON.stringify(body.slice(0, 600)) + (body.length > 600 ? ` … (${body.length} characters)` : '');
      const context = `${options.name} ${contentType ?? '(no content type)'}: ${shown}`;
      outcomes.set(response.status, (outcomes.get(response.status) ?? 0) + 1);
      assert.ok(response.status < 500, `not a server error: ${response.status} ${JSON.stringify(answer)}\n${context}`);
      if (response.status >= 400) assertErrorObject(response.status, answer, context);
    });
    assert.ok(
      [...outcomes.keys()].some((status) => status >= 400),
      `some bodies were refused: ${JSON.stringify([...outcomes])}`,
    );
    assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched');

    const healthy = await fetchWithin(options.url(), {
      method: options.method ?? 'POST',
      headers: { ...options.headers(), 'content-type': 'application/json' },
      body: JSON.stringify(options.valid),
    });
    assert.equal(
      healthy.status,
      options.okStatus,
      `a valid body still works after the fuzzing: ${await healthy.text()}`,
    );
  }

  const admin = (service: ServiceUnderTest) => () => ({ authorization: `Bearer ${service.adminToken}` });
  const asReader = (reader: Reader) => () => ({ cookie: reader.cookie!, 'x-csrf-token': reader.csrf! });

  it('exchange POST /v1/messages', async () => {
    await fuzzEndpoint({
      name: 'exchange POST /v1/messages',
      url: () => `${exchange.url}/v1/messages`,
      headers: () => ({ authorization: `Bearer ${exchange.serviceToken}` }),
      valid: {
        from: 'Bob <bob@example.com>',
        to: ['alice@example.com'],
        cc: ['carol@example.com'],
        subject: 'Hello',
        text: 'Hi',
        html: '<p>Hi</p>',
        inReplyTo: '<a@example.com>',
        references: ['<a@example.com>'],
        attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: 'aGVsbG8=' }],
        recipients: [{ email: 'alice@example.com', mobile: '+41791234567' }],
      },
      okStatus: 202,
    });
  });

  it('exchange POST /v1/config and PUT /v1/config/{id}', async () => {
    const valid = {
      name: 'fuzzed',
      priority: 7000,
      configuration: { params: { channel: 'smtp', sender: 'x@example.com' }, outbound: ['seal', 'smtp'] },
    };
    await fuzzEndpoint({
      name: 'exchange POST /v1/config',
      url: () => `${exchange.url}/v1/config`,
      headers: admin(exchange),
      valid,
      okStatus: 201,
    });
    await fuzzEndpoint({
      name: 'exchange PUT /v1/config/{id}',
      method: 'PUT',
      url: () => `${exchange.url}/v1/config/${ruleId}`,
      headers: admin(exchange),
      valid,
      okStatus: 200,
    });
  });

  it('seal POST /v1/ipfs/config', async () => {
    await fuzzEndpoint({
      name: 'seal POST /v1/ipfs/config',
      url: () => `${seal.url}/v1/ipfs/config`,
      headers: admin(seal),
      valid: {
        clusters: [
          {
            host: '127.0.0.1',
            port: '9094',
            user: 'u',
            pass: 'p',
            secure: false,
            timeout: '30s',
            addParams: {
              local: true,
              recursive: false,
              hidden: false,
              wrap: false,
              shard: false,
              streamChannels: true,
              noPin: false,
            },
            pinParams: { replicationFactorMin: 1, replicationFactorMax: 2, name: 'n', expireIn: '1h' },
          },
          { host: 'cluster-2.example' },
        ],
      },
      okStatus: 201,
    });
  });

  it('auth POST /v1/auth/code and POST /v1/auth/verify', async () => {
    await fuzzEndpoint({
      name: 'auth POST /v1/auth/code',
      url: () => `${harness.auth.url}/v1/auth/code`,
      headers: asReader(visitor),
      valid: { messageId, email: 'alice@example.com', mobile: '+41791234567', method: 'sms' },
      okStatus: 200,
    });
    await fuzzEndpoint({
      name: 'auth POST /v1/auth/verify',
      url: () => `${harness.auth.url}/v1/auth/verify`,
      headers: asReader(visitor),
      valid: { code: '000000', rememberMe: true },
      // A made-up code: the valid body is still a 401 incorrect_code, an error object and no crash.
      okStatus: 401,
    });
  });

  it('auth PUT /v1/message/reply (signed in)', async () => {
    await fuzzEndpoint({
      name: 'auth PUT /v1/message/reply',
      method: 'PUT',
      url: () => `${harness.auth.url}/v1/message/reply`,
      headers: asReader(alice),
      valid: { text: 'Thanks', html: '<p>Thanks</p>', bcc: 'alice@example.com' },
      okStatus: 200,
    });
    assert.equal((await alice.get('/v1/message')).status, 200, 'the signed-in session still reads its message');
  });
});
