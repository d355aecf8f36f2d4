import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Small secrets encrypted with SEAL_MASTER_KEY: message keys and cluster passwords.
 * Text form `v1.<base64url(nonce(12) | ciphertext | tag(16))>`, AES-256-GCM. The `label` is the
 * additional authenticated data: it binds a wrapped key to its sealed message id (a key copied onto
 * another record does not unwrap) and keeps passwords and message keys apart.
 */
const PREFIX = 'v1.';

export function sealSecret(masterKey: Buffer, plaintext: Buffer, label: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey, nonce);
  cipher.setAAD(Buffer.from(label, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return PREFIX + Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
}

export class SecretError extends Error {}

export function openSecret(masterKey: Buffer, sealed: string, label: string): Buffer {
  if (!sealed.startsWith(PREFIX)) throw new SecretError('unknown secret format');
  const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64url');
  if (raw.length < 28) throw new SecretError('secret is too short');
  const decipher = createDecipheriv('aes-256-gcm', masterKey, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(label, 'utf8'));
  decipher.setAuthTag(raw.subarray(raw.length - 16));
  try {
    return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
  } catch (error) {
    throw new SecretError('secret does not open with SEAL_MASTER_KEY (was the key changed?)', { cause: error });
  }
}

export const messageKeyLabel = (sealedId: string) => `sealpost/message-key/${sealedId}`;
export const CLUSTER_PASS_LABEL = 'sealpost/cluster-pass';
