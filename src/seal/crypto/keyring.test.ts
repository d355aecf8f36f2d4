import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import { environmentKey, singleKeyring } from './environment-key.ts';
import { Keyring } from './keyring.ts';
import { CLUSTER_PASS_LABEL, messageKeyLabel, SecretError, secretVersion } from './secret-box.ts';

/** A message key wrapped as Sealpost wrote it before key versions (`v1.`, AES-256-GCM under SEAL_MASTER_KEY). */
function legacyWrap(master: Buffer, plaintext: Buffer, label: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', master, nonce);
  cipher.setAAD(Buffer.from(label, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return `v1.${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url')}`;
}

const env = (version: number, key: Buffer) => ({
  version,
  source: 'environment' as const,
  variable: 'SEAL_MASTER_KEYS',
  key: environmentKey(key),
});

describe('master key versions', () => {
  it('reads a key wrapped before versions existed as version 1, the single SEAL_MASTER_KEY', () => {
    const master = randomBytes(32);
    const key = randomBytes(32);
    const legacy = legacyWrap(master, key, messageKeyLabel('m'));
    assert.equal(secretVersion(legacy), 1);
    const keyring = new Keyring(2, [env(1, master), env(2, randomBytes(32))]);
    assert.deepEqual(keyring.unwrap(legacy, messageKeyLabel('m')), key);
  });

  it('wraps under the current version and unwraps each value with the version it names', () => {
    const one = randomBytes(32);
    const two = randomBytes(32);
    const old = new Keyring(1, [env(1, one)]);
    const both = new Keyring(2, [env(1, one), env(2, two)]);
    const underOne = old.wrap(Buffer.from('secret'), CLUSTER_PASS_LABEL);
    const underTwo = both.wrap(Buffer.from('secret'), CLUSTER_PASS_LABEL);
    assert.equal(secretVersion(underOne), 1);
    assert.equal(secretVersion(underTwo), 2);
    assert.equal(both.unwrap(underOne, CLUSTER_PASS_LABEL).toString(), 'secret');
    assert.equal(both.unwrap(underTwo, CLUSTER_PASS_LABEL).toString(), 'secret');
    // Version 2 alone cannot read what version 1 wrapped, and says which version is missing where.
    assert.throws(
      () => singleKeyring(two, 2).unwrap(underOne, CLUSTER_PASS_LABEL),
      (error: Error) =>
        error instanceof SecretError && /key version 1, which is not configured.*SEAL_MASTER_KEYS/.test(error.message),
    );
  });

  it('refuses a current version that is not configured', () => {
    assert.throws(() => new Keyring(3, [env(1, randomBytes(32))]), /key version 3 is not configured/);
  });
});
