import { readFile } from 'node:fs/promises';
import type { KeyVersion } from './keyring.ts';
import type { WrappingKey } from './secret-box.ts';

/** What SEAL_KEY_PKCS11_* configure: the token, how to log in, and each key version's label on it. */
export interface Pkcs11Settings {
  module: string;
  /** A slot id (digits) or the token's label. */
  slot: string;
  pinFile: string;
  /** Key version to the label of its AES key (CKA_LABEL) on the token. */
  keys: Map<number, string>;
}

type Pkcs11Module = typeof import('pkcs11js');
type Pkcs11 = InstanceType<Pkcs11Module['PKCS11']>;

/**
 * Opens the PKCS#11 token that holds the HSM key versions: the keys never leave it; every wrap and unwrap is an
 * AES-256-GCM C_Encrypt/C_Decrypt in the token with the secret's label as additional data, so an HSM version
 * writes the same `k<version>.` form as a version given in the environment. Each refusal names the variable
 * to fix. pkcs11js is an optional native dependency: loaded here only, when SEAL_KEY_PKCS11_MODULE is set.
 */
export async function openPkcs11Keys(settings: Pkcs11Settings): Promise<{ versions: KeyVersion[]; close(): void }> {
  let binding: Pkcs11Module;
  try {
    binding = (await import('pkcs11js')).default as unknown as Pkcs11Module;
  } catch (error) {
    throw new Error(
      'SEAL_KEY_PKCS11_MODULE is set, but the PKCS#11 binding (the optional package pkcs11js, a native addon) is ' +
        'not installed: run `npm ci` where a C++ compiler, make and python3 are present ' +
        `(${(error as Error).message})`,
    );
  }
  let pin: string;
  try {
    pin = (await readFile(settings.pinFile, 'utf8')).trim();
  } catch (error) {
    throw new Error(`SEAL_KEY_PKCS11_PIN_FILE=${settings.pinFile} cannot be read: ${(error as Error).message}`);
  }
  const pkcs11: Pkcs11 = new binding.PKCS11();
  try {
    pkcs11.load(settings.module);
  } catch (error) {
    throw new Error(`SEAL_KEY_PKCS11_MODULE=${settings.module} cannot be loaded: ${(error as Error).message}`);
  }
  let initialized = false;
  try {
    pkcs11.C_Initialize();
    initialized = true;
    const slot = findSlot(pkcs11, settings.slot);
    const session = pkcs11.C_OpenSession(slot, binding.CKF_SERIAL_SESSION);
    try {
      pkcs11.C_Login(session, binding.CKU_USER, pin);
    } catch (error) {
      const code = (error as Error).message;
      throw new Error(
        `SEAL_KEY_PKCS11_PIN_FILE=${settings.pinFile}: the token in SEAL_KEY_PKCS11_SLOT=${settings.slot} refused ` +
          `the PIN (${code.split(':')[0]})`,
      );
    }
    const versions: KeyVersion[] = [];
    for (const [version, label] of settings.keys) {
      pkcs11.C_FindObjectsInit(session, [
        { type: binding.CKA_CLASS, value: binding.CKO_SECRET_KEY },
        { type: binding.CKA_LABEL, value: label },
      ]);
      const found = pkcs11.C_FindObjects(session, 2);
      pkcs11.C_FindObjectsFinal(session);
      if (found.length !== 1) {
        throw new Error(
          `SEAL_KEY_PKCS11_KEYS: key version ${version}'s label "${label}" names ` +
            `${found.length === 0 ? 'no secret key' : 'more than one secret key'} on the token in ` +
            `SEAL_KEY_PKCS11_SLOT=${settings.slot}`,
        );
      }
      versions.push({
        version,
        source: 'pkcs11',
        variable: 'SEAL_KEY_PKCS11_KEYS',
        key: tokenKey(binding, pkcs11, session, found[0]!),
      });
    }
    return {
      versions,
      close() {
        try {
          pkcs11.C_Finalize();
        } catch {
          // already finalized: nothing to let go of
        }
      },
    };
  } catch (error) {
    if (initialized) pkcs11.C_Finalize();
    if (error instanceof Error && error.message.startsWith('SEAL_KEY_PKCS11')) throw error;
    throw new Error(`SEAL_KEY_PKCS11_MODULE=${settings.module}: the token failed: ${(error as Error).message}`);
  }
}

/** The slot SEAL_KEY_PKCS11_SLOT names by id or by its token's label; the tokens present are listed when none does. */
function findSlot(pkcs11: Pkcs11, wanted: string): Buffer {
  const present = pkcs11.C_GetSlotList(true).map((slot) => ({
    slot,
    id: slot.readBigUInt64LE(0).toString(),
    label: pkcs11.C_GetTokenInfo(slot).label.trim(),
  }));
  const match = present.find((entry) => entry.id === wanted || entry.label === wanted);
  if (match) return match.slot;
  const listed = present.map((entry) => `"${entry.label}" in slot ${entry.id}`).join(', ') || 'none';
  throw new Error(
    `SEAL_KEY_PKCS11_SLOT=${wanted}: no token in a slot of that id or with that label (tokens present: ${listed})`,
  );
}

/** AES-256-GCM by the token (CKM_AES_GCM): 96-bit nonce, 128-bit tag, the label as additional data. */
function tokenKey(binding: Pkcs11Module, pkcs11: Pkcs11, session: Buffer, handle: Buffer): WrappingKey {
  const mechanism = (nonce: Buffer, aad: Buffer) => ({
    mechanism: binding.CKM_AES_GCM,
    parameter: { type: binding.CK_PARAMS_AES_GCM, iv: nonce, aad, ivBits: nonce.length * 8, tagBits: 128 },
  });
  return {
    encrypt(nonce, plaintext, aad) {
      pkcs11.C_EncryptInit(session, mechanism(nonce, aad), handle);
      return Buffer.from(pkcs11.C_Encrypt(session, plaintext, Buffer.alloc(plaintext.length + 16)));
    },
    decrypt(nonce, sealed, aad) {
      pkcs11.C_DecryptInit(session, mechanism(nonce, aad), handle);
      return Buffer.from(pkcs11.C_Decrypt(session, sealed, Buffer.alloc(sealed.length)));
    },
  };
}
