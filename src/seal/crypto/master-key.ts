import { randomBytes } from 'node:crypto';
import type { SharedConfig } from '../../kernel/config.ts';
import { readOrCreateSecretFile } from '../../kernel/secret-file.ts';

export const MASTER_KEY_FILE = 'seal-master.key';

/**
 * SEAL_MASTER_KEY wraps every message key and every stored cluster password. In production it must be
 * given: a key generated on one machine would make another instance unable to read anything. Elsewhere
 * one is generated once into the data folder (mode 0600) and reused, so development restarts keep
 * their sealed messages readable.
 */
export async function resolveMasterKey(
  config: SharedConfig,
  masterKey: Buffer | undefined,
): Promise<{ key: Buffer; source: 'environment' | 'file' | 'generated'; file?: string }> {
  if (masterKey) return { key: masterKey, source: 'environment' };
  if (config.production) {
    throw new Error(
      'SEAL_MASTER_KEY is not set: production needs the key that wraps message ' +
        'keys and cluster passwords, the same on every instance. Generate one with ' +
        '`openssl rand -hex 32` and keep it safe: without it no sealed message can be read.',
    );
  }
  const { text, created, file } = await readOrCreateSecretFile(config.dataDir, MASTER_KEY_FILE, {
    generate: () => randomBytes(32).toString('hex'),
    valid: (stored) => /^[0-9a-fA-F]{64}$/.test(stored),
    expected: 'a 32-byte key as 64 hex digits',
  });
  return { key: Buffer.from(text, 'hex'), source: created ? 'generated' : 'file', file };
}
