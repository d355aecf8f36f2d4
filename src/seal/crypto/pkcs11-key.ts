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

type Handle = Buffer;
type Template = Array<{ type: number; value?: number | boolean | string | Buffer }>;
type Mechanism = { mechanism: number; parameter?: Buffer | number | Record<string, unknown> };

/**
 * The part of pkcs11js (https://github.com/PeculiarVentures/pkcs11js) Sealpost calls, typed here: the package is
 * an optional native dependency, absent where it could not be built, and neither `tsc` nor `npm run build` may
 * depend on its type declarations being installed.
 */
export interface Pkcs11 {
  load(path: string): void;
  C_Initialize(): void;
  C_Finalize(): void;
  C_GetSlotList(tokenPresent?: boolean): Handle[];
  C_GetTokenInfo(slot: Handle): { label: string };
  C_OpenSession(slot: Handle, flags: number): Handle;
  C_CloseSession(session: Handle): void;
  C_Login(session: Handle, userType: number, pin?: string): void;
  C_Logout(session: Handle): void;
  C_FindObjectsInit(session: Handle, template: Template): void;
  C_FindObjects(session: Handle, maxObjectCount: number): Handle[];
  C_FindObjectsFinal(session: Handle): void;
  C_GenerateKey(session: Handle, mechanism: Mechanism, template: Template): Handle;
  C_EncryptInit(session: Handle, mechanism: Mechanism, key: Handle): void;
  C_Encrypt(session: Handle, inData: Buffer, outData: Buffer): Buffer;
  C_DecryptInit(session: Handle, mechanism: Mechanism, key: Handle): void;
  C_Decrypt(session: Handle, inData: Buffer, outData: Buffer): Buffer;
}

/** Results after which the token is connected to again (the others are the call's own failure). */
const LOST = [
  'CKR_CRYPTOKI_NOT_INITIALIZED',
  'CKR_DEVICE_ERROR',
  'CKR_DEVICE_REMOVED',
  'CKR_KEY_HANDLE_INVALID',
  'CKR_OBJECT_HANDLE_INVALID',
  'CKR_SESSION_CLOSED',
  'CKR_SESSION_HANDLE_INVALID',
  'CKR_TOKEN_NOT_PRESENT',
  'CKR_USER_NOT_LOGGED_IN',
] as const;

/** The constants used, here and by the tests that create a key on a SoftHSM2 token. */
const CONSTANTS = [
  'CKA_CLASS',
  'CKA_DECRYPT',
  'CKA_ENCRYPT',
  'CKA_EXTRACTABLE',
  'CKA_KEY_TYPE',
  'CKA_LABEL',
  'CKA_PRIVATE',
  'CKA_SENSITIVE',
  'CKA_TOKEN',
  'CKA_VALUE_LEN',
  'CKF_RW_SESSION',
  'CKF_SERIAL_SESSION',
  'CKK_AES',
  'CKM_AES_GCM',
  'CKM_AES_KEY_GEN',
  'CKO_SECRET_KEY',
  'CKU_USER',
  'CK_PARAMS_AES_GCM',
  ...LOST,
] as const;

export type Pkcs11Module = { PKCS11: new () => Pkcs11 } & Record<(typeof CONSTANTS)[number], number>;

/** pkcs11js, loaded when first needed; a sentence naming SEAL_KEY_PKCS11_MODULE when it is not installed. */
export async function loadPkcs11(): Promise<Pkcs11Module> {
  // A name in a variable: the import is resolved at run time only, never by the type checker or the build.
  const name = 'pkcs11js';
  try {
    const loaded = (await import(name)) as { default?: Pkcs11Module } & Pkcs11Module;
    const binding = loaded.default ?? loaded;
    for (const constant of CONSTANTS) {
      if (typeof binding[constant] !== 'number') throw new Error(`pkcs11js has no ${constant}`);
    }
    return binding;
  } catch (error) {
    throw new Error(
      'SEAL_KEY_PKCS11_MODULE is set, but the PKCS#11 binding (the optional package pkcs11js, a native addon) is ' +
        'not installed: run `npm ci` where a C++ compiler, make and python3 are present ' +
        `(${(error as Error).message})`,
    );
  }
}

/**
 * Opens the PKCS#11 token that holds the HSM key versions: the keys never leave it; every wrap and unwrap is an
 * AES-256-GCM C_Encrypt/C_Decrypt in the token with the secret's label as additional data, so an HSM version
 * writes the same `k<version>.` form as a version given in the environment. Each refusal names the variable
 * to fix. pkcs11js is an optional native dependency: loaded here only, when SEAL_KEY_PKCS11_MODULE is set.
 */
export async function openPkcs11Keys(settings: Pkcs11Settings): Promise<{ versions: KeyVersion[]; close(): void }> {
  const binding = await loadPkcs11();
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
  const token = new Token(binding, pkcs11, settings, pin);
  token.connect();
  return {
    versions: [...settings.keys.keys()].map((version) => ({
      version,
      source: 'pkcs11' as const,
      variable: 'SEAL_KEY_PKCS11_KEYS',
      key: tokenKey(token, version),
    })),
    close: () => token.close(),
  };
}

/**
 * The token's one logged-in session and the handles of the key versions' objects. A network HSM restarted, a
 * token taken out and put back, or the library reset ends the session, and with it the login and (on some
 * tokens) the object handles. The wrap or unwrap that meets such an end connects again (initialise, slot,
 * session, login, handles) and is made once more; each is a pure function of its input, so making it twice
 * changes nothing. While the token cannot be reached each call fails, naming it, and the next one tries again:
 * the seal service answers 5xx meanwhile and works again when the token is back, without a restart.
 */
class Token {
  private session: Handle | undefined;
  private readonly handles = new Map<number, Handle>();
  /** The PKCS#11 results that mean the session or the token went away, not that the call was wrong. */
  private readonly lost: Set<number>;

  constructor(
    readonly binding: Pkcs11Module,
    readonly pkcs11: Pkcs11,
    private readonly settings: Pkcs11Settings,
    private readonly pin: string,
  ) {
    this.lost = new Set(LOST.map((name) => binding[name]));
  }

  /** Initialises the library, logs in and finds every version's key; each refusal names the variable to fix. */
  connect(): void {
    const { binding, pkcs11, settings } = this;
    let initialized = false;
    try {
      pkcs11.C_Initialize();
      initialized = true;
      const slot = findSlot(pkcs11, settings.slot);
      const session = pkcs11.C_OpenSession(slot, binding.CKF_SERIAL_SESSION);
      try {
        pkcs11.C_Login(session, binding.CKU_USER, this.pin);
      } catch (error) {
        const code = (error as Error).message;
        throw new Error(
          `SEAL_KEY_PKCS11_PIN_FILE=${settings.pinFile}: the token in SEAL_KEY_PKCS11_SLOT=${settings.slot} ` +
            `refused the PIN (${code.split(':')[0]})`,
        );
      }
      for (const [version, label] of settings.keys) this.handles.set(version, this.findKey(session, version, label));
      this.session = session;
    } catch (error) {
      if (initialized) this.finalize();
      if (error instanceof Error && error.message.startsWith('SEAL_KEY_PKCS11')) throw error;
      throw new Error(`SEAL_KEY_PKCS11_MODULE=${settings.module}: the token failed: ${(error as Error).message}`);
    }
  }

  /** `call` in the session with the version's key; once more after connecting again when the token went away. */
  use<T>(version: number, call: (session: Handle, key: Handle) => T): T {
    if (this.session) {
      try {
        return call(this.session, this.handles.get(version)!);
      } catch (error) {
        if (!this.lost.has((error as { code?: number }).code ?? -1)) throw error;
      }
    }
    this.session = undefined;
    this.finalize();
    this.connect();
    return call(this.session!, this.handles.get(version)!);
  }

  close(): void {
    this.session = undefined;
    this.finalize();
  }

  /** The one secret key labelled `label` on the token, for key version `version`. */
  private findKey(session: Handle, version: number, label: string): Handle {
    const { binding, pkcs11 } = this;
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
          `SEAL_KEY_PKCS11_SLOT=${this.settings.slot}`,
      );
    }
    return found[0]!;
  }

  private finalize(): void {
    try {
      this.pkcs11.C_Finalize();
    } catch {
      // already finalized (or never initialised): nothing to let go of
    }
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
function tokenKey(token: Token, version: number): WrappingKey {
  const { binding, pkcs11 } = token;
  const mechanism = (nonce: Buffer, aad: Buffer) => ({
    mechanism: binding.CKM_AES_GCM,
    parameter: { type: binding.CK_PARAMS_AES_GCM, iv: nonce, aad, ivBits: nonce.length * 8, tagBits: 128 },
  });
  return {
    encrypt: (nonce, plaintext, aad) =>
      token.use(version, (session, key) => {
        pkcs11.C_EncryptInit(session, mechanism(nonce, aad), key);
        return Buffer.from(pkcs11.C_Encrypt(session, plaintext, Buffer.alloc(plaintext.length + 16)));
      }),
    decrypt: (nonce, sealed, aad) =>
      token.use(version, (session, key) => {
        pkcs11.C_DecryptInit(session, mechanism(nonce, aad), key);
        return Buffer.from(pkcs11.C_Decrypt(session, sealed, Buffer.alloc(sealed.length)));
      }),
  };
}
