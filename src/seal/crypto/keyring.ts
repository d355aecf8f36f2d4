import { openSecret, SecretError, sealSecret, secretVersion, type WrappingKey } from './secret-box.ts';

/** Where a key version is held, as `sealpost keys status` and the start log show it. */
export type KeySource = 'environment' | 'file' | 'generated' | 'pkcs11';

export interface KeyVersion {
  version: number;
  source: KeySource;
  /** The variable that configures it: named by every refusal that concerns it. */
  variable: string;
  key: WrappingKey;
}

/** The variables that can hold a key version, for the sentences that ask for one. */
export const KEY_VARIABLES = 'SEAL_MASTER_KEY (version 1), SEAL_MASTER_KEYS or SEAL_KEY_PKCS11_KEYS';

/**
 * The master key versions configured (docs/operating.md#the-master-keys): `current` wraps every new message key
 * and stored password; every version unwraps what it wrapped. A wrapped secret names its version
 * (crypto/secret-box.ts), so old and new values live side by side until a rotation re-wraps the old ones.
 */
export class Keyring {
  private readonly byVersion: Map<number, KeyVersion>;

  constructor(
    readonly current: number,
    versions: KeyVersion[],
    private readonly onClose: () => void = () => {},
  ) {
    this.byVersion = new Map(versions.map((entry) => [entry.version, entry]));
    if (!this.byVersion.has(current)) throw new Error(`key version ${current} is not configured`);
  }

  /** The versions configured, lowest first. */
  versions(): Array<Omit<KeyVersion, 'key'>> {
    return [...this.byVersion.values()]
      .sort((a, b) => a.version - b.version)
      .map(({ version, source, variable }) => ({ version, source, variable }));
  }

  has(version: number): boolean {
    return this.byVersion.has(version);
  }

  /** Wraps under the current version. */
  wrap(plaintext: Buffer, label: string): string {
    return this.wrapWith(this.current, plaintext, label);
  }

  wrapWith(version: number, plaintext: Buffer, label: string): string {
    return sealSecret(this.entry(version).key, version, plaintext, label);
  }

  /** Unwraps with the version the value names; a SecretError when that version is missing or does not open it. */
  unwrap(sealed: string, label: string): Buffer {
    const version = secretVersion(sealed);
    if (version === undefined) throw new SecretError('unknown secret format');
    const entry = this.entry(version);
    return openSecret(entry.key, sealed, label, `key version ${version} (${entry.variable})`);
  }

  /** Lets go of the PKCS#11 session, if any. */
  close(): void {
    this.onClose();
  }

  private entry(version: number): KeyVersion {
    const entry = this.byVersion.get(version);
    if (!entry) {
      throw new SecretError(`wrapped by key version ${version}, which is not configured: set it in ${KEY_VARIABLES}`);
    }
    return entry;
  }
}
