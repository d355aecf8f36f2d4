import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Value } from 'typebox/value';
import { createAuthMetrics } from '../metrics.ts';
import { SIGN_IN_METHODS, signInMethodSchema } from './names.ts';
import { createSignInMethods, SIGN_IN_METHOD_REGISTRY } from './registry.ts';

describe('sign-in methods: one list', () => {
  it('has a method in the registry for each listed name, and nothing else', () => {
    assert.deepEqual(Object.keys(SIGN_IN_METHOD_REGISTRY).sort(), [...SIGN_IN_METHODS].sort());
    const methods = createSignInMethods({
      provider: { kind: 'log', send: async () => {} },
      smsText: 'Your code is {code}',
      mailer: { kind: 'outbox', send: async () => {}, close: async () => {} },
      expiresInMinutes: 15,
      logCodes: false,
      metrics: createAuthMetrics(new Registry()),
      defaultLanguage: 'en',
    });
    for (const name of SIGN_IN_METHODS) assert.equal(methods[name].name, name);
  });

  it("the routes' schema takes the listed names and refuses others", () => {
    for (const name of SIGN_IN_METHODS) assert.ok(Value.Check(signInMethodSchema(), name), name);
    for (const other of ['fax', 'SMS', '']) assert.ok(!Value.Check(signInMethodSchema(), other), other);
  });
});
