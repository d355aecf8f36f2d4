import { randomBytes } from 'node:crypto';
import { access } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { SharedConfig } from '../../kernel/config.ts';
import { readOrCreateSecretFile } from '../../kernel/secret-file.ts';
import type { SealConfig } from '../config.ts';
import { environmentKey } from './environment-key.ts';
import { KEY_VARIABLES, Keyring, type KeyVersion } from './keyring.ts';
import { openPkcs11Keys } from './pkcs11-key.ts';

export const MASTER_KEY_FILE = 'seal-master.key';

type KeySettings = Pick<SealConfig, 'masterKey' | 'masterKeys' | 'masterKeyVersion' | 'keyPkcs11'>;

/**
 * The master key versions (docs/operating.md#the-master-keys): SEAL_MASTER_KEY is version 1, SEAL_MASTER_KEYS
 * gives more, SEAL_KEY_PKCS11_KEYS names those a PKCS#11 token holds. They wrap every message key and every stored
 * cluster password. In production one must be given: a key generated on one machine would make another instance
 * unable to read anything. Elsewhere version 1 is generated once into the data folder (mode 0600) and reused, so
 * development restarts keep their sealed messages readable.
 */
export async function resolveKeyring(
  config: SharedConfig,
  settings: KeySettings,
): Promise<{ keyring: Keyring; generatedFile?: string }> {
  const versions: KeyVersion[] = [];
  if (settings.masterKey) {
    versions.push({
      version: 1,
      source: 'environment',
      variable: 'SEAL_MASTER_KEY',
      key: environmentKey(settings.masterKey),
    });
  }
  for (const [version, key] of settings.masterKeys ?? []) {
    versions.push({ version, source: 'environment', variable: 'SEAL_MASTER_KEYS', key: environmentKey(key) });
  }
  let generatedFile: string | undefined;
  const nothingGiven = versions.length === 0 && !settings.keyPkcs11;
  if (nothingGiven && config.production) {
    throw new Error(
      'SEAL_MASTER_KEY is not set: production needs the key that wraps message ' +
        'keys and cluster passwords, the same on every instance. Generate one with ' +
        '`openssl rand -hex 32` and keep it safe: without it no sealed message can be read ' +
        '(or give key versions in SEAL_MASTER_KEYS or SEAL_KEY_PKCS11_KEYS).',
    );
  }
  // Outside production the data folder's key is version 1 when nothing else is, or when it exists and no variable
  // gives version 1: a development setup that adds version 2 keeps reading what the file's key wrapped.
  const file = join(resolve(config.dataDir), MASTER_KEY_FILE);
  const pkcsHasOne = settings.keyPkcs11?.keys.has(1) ?? false;
  if (!config.production && !versions.some((entry) => entry.version === 1) && !pkcsHasOne) {
    if (nothingGiven || (await exists(file))) {
      const { text, created } = await readOrCreateSecretFile(config.dataDir, MASTER_KEY_FILE, {
        generate: () => randomBytes(32).toString('hex'),
        valid: (stored) => /^[0-9a-fA-F]{64}$/.test(stored),
        expected: 'a 32-byte key as 64 hex digits',
      });
      if (created) generatedFile = file;
      versions.push({
        version: 1,
        source: created ? 'generated' : 'file',
        variable: `the data folder's ${MASTER_KEY_FILE}`,
        key: environmentKey(Buffer.from(text, 'hex')),
      });
    }
  }
  let close = () => {};
  if (settings.keyPkcs11) {
    const token = await openPkcs11Keys(settings.keyPkcs11);
    versions.push(...token.versions);
    close = token.close;
  }
  const highest = Math.max(...versions.map((entry) => entry.version));
  const current = settings.masterKeyVersion ?? highest;
  if (!versions.some((entry) => entry.version === current)) {
    close();
    throw new Error(
      `SEAL_MASTER_KEY_VERSION=${current} names a key version that is not configured: configured are ` +
        `${versions.map((entry) => entry.version).join(', ')} (${KEY_VARIABLES})`,
    );
  }
  return { keyring: new Keyring(current, versions, close), ...(generatedFile ? { generatedFile } : {}) };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
