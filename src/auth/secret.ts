import { hkdfSync, randomBytes } from 'node:crypto';
import type { SharedConfig } from '../kernel/config.ts';
import { readOrCreateSecretFile } from '../kernel/secret-file.ts';

export const AUTH_SECRET_FILE = 'auth-secret.key';

/** Keys derived from AUTH_SECRET, one per use, so that no value of one use helps with another. */
export interface AuthKeys {
  /** HMAC of one-time codes (the table stores nothing else about a code). */
  codeKey: Buffer;
  /** HMAC that turns a session token into its CSRF token. */
  csrfKey: Buffer;
}

/**
 * AUTH_SECRET keys the code HMACs. In production it must be given and be the same on every instance
 * (a code sent by one instance is checked by another). Elsewhere one is generated once into the data
 * folder (mode 0600) and reused, like the seal service's master key.
 */
export async function resolveAuthSecret(
  config: SharedConfig,
  secret: string | undefined,
): Promise<{ secret: string; source: 'environment' | 'file' | 'generated' }> {
  if (secret) return { secret, source: 'environment' };
  if (config.production) {
    throw new Error(
      'AUTH_SECRET is not set: production needs the secret that keys sign-in codes and CSRF tokens, ' +
        'the same on every auth instance. Generate one with `openssl rand -hex 32`.',
    );
  }
  const { text, created } = await readOrCreateSecretFile(config.dataDir, AUTH_SECRET_FILE, {
    generate: () => randomBytes(32).toString('hex'),
    valid: (stored) => stored.length >= 32,
    expected: 'a secret of at least 32 characters',
  });
  return { secret: text, source: created ? 'generated' : 'file' };
}

export function deriveKeys(secret: string): AuthKeys {
  const derive = (info: string) =>
    Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), info, 32));
  return { codeKey: derive('sealpost auth: one-time code hmac'), csrfKey: derive('sealpost auth: csrf token') };
}
