import { randomBytes } from 'node:crypto';

/**
 * Small secrets wrapped by a master key version (docs/operating.md#the-master-keys): message keys and cluster
 * passwords. Text form `k<version>.<base64url(nonce(12) | ciphertext | tag(16))>`, AES-256-GCM, done by the key
 * version's holder (the process for a key given in the environment, the PKCS#11 token for an HSM key). The
 * `label` is the additional authenticated data: it binds a wrapped key to its sealed message id (a key copied onto
 * another record does not unwrap) and keeps passwords and message keys apart.
 *
 * `v1.<…>`, the form written before key versions existed, is read as key version 1 (the single SEAL_MASTER_KEY):
 * the same bytes, so existing data stays readable unchanged and is re-wrapped into the `k` form by a rotation.
 */
const LEGACY_PREFIX = 'v1.';
const VERSIONED = /^k([1-9][0-9]{0,3})\./;
const NONCE = 12;
const TAG = 16;

/** A key version's AES-256-GCM, wherever the key is: ciphertext | tag out, plaintext back. */
export interface WrappingKey {
  encrypt(nonce: Buffer, plaintext: Buffer, aad: Buffer): Buffer;
  decrypt(nonce: Buffer, sealed: Buffer, aad: Buffer): Buffer;
}

export class SecretError extends Error {}

/** The key version a wrapped secret names; undefined when the text is no wrapped secret. */
export function secretVersion(sealed: string): number | undefined {
  if (sealed.startsWith(LEGACY_PREFIX)) return 1;
  const match = VERSIONED.exec(sealed);
  return match ? Number(match[1]) : undefined;
}

export function sealSecret(key: WrappingKey, version: number, plaintext: Buffer, label: string): string {
  const nonce = randomBytes(NONCE);
  const body = key.encrypt(nonce, plaintext, Buffer.from(label, 'utf8'));
  return `k${version}.${Buffer.concat([nonce, body]).toString('base64url')}`;
}

export function openSecret(key: WrappingKey, sealed: string, label: string, keyName: string): Buffer {
  const dot = sealed.indexOf('.');
  if (secretVersion(sealed) === undefined || dot < 0) throw new SecretError('unknown secret format');
  const raw = Buffer.from(sealed.slice(dot + 1), 'base64url');
  if (raw.length < NONCE + TAG) throw new SecretError('secret is too short');
  try {
    return key.decrypt(raw.subarray(0, NONCE), raw.subarray(NONCE), Buffer.from(label, 'utf8'));
  } catch (error) {
    throw new SecretError(`secret does not open with ${keyName} (was the key changed?)`, { cause: error });
  }
}

export const messageKeyLabel = (sealedId: string) => `sealpost/message-key/${sealedId}`;
export const CLUSTER_PASS_LABEL = 'sealpost/cluster-pass';
/** The check value of a key version (seal_key_versions): proves at start that a version is the key it was. */
export const keyCheckLabel = (version: number) => `sealpost/key-check/${version}`;
