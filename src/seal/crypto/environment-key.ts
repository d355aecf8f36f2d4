import { createCipheriv, createDecipheriv } from 'node:crypto';
import { Keyring } from './keyring.ts';
import type { WrappingKey } from './secret-box.ts';

/** A master key version held by the process (SEAL_MASTER_KEY, SEAL_MASTER_KEYS or the data folder's key file). */
export function environmentKey(key: Buffer): WrappingKey {
  return {
    encrypt(nonce, plaintext, aad) {
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      cipher.setAAD(aad);
      return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    },
    decrypt(nonce, sealed, aad) {
      const decipher = createDecipheriv('aes-256-gcm', key, nonce);
      decipher.setAAD(aad);
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]);
    },
  };
}

/** A keyring of one version held by the process (SEAL_MASTER_KEY alone), for tests and tools reading the database. */
export function singleKeyring(key: Buffer, version = 1): Keyring {
  const variable = version === 1 ? 'SEAL_MASTER_KEY' : 'SEAL_MASTER_KEYS';
  return new Keyring(version, [{ version, source: 'environment', variable, key: environmentKey(key) }]);
}
