import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadPkcs11 } from '../../src/seal/crypto/pkcs11-key.ts';

const run = promisify(execFile);

/** Debian's SoftHSM2 (package softhsm2): a real PKCS#11 implementation, its tokens in files. */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

export interface SoftHsm {
  /** SOFTHSM2_CONF for every process that opens the token. */
  conf: string;
  tokenLabel: string;
  pinFile: string;
  /** Creates an AES-256 secret key on the token: sensitive, never extractable, for encrypt and decrypt. */
  addKey(label: string, options?: { encrypt?: boolean }): Promise<void>;
  /** The SEAL_KEY_PKCS11_* variables (and SOFTHSM2_CONF) for key versions held on this token. */
  env(keys: string): Record<string, string>;
  close(): Promise<void>;
}

/**
 * A SoftHSM2 token of its own in a temp folder (`softhsm2-util --init-token`), with the user PIN in a file, as an
 * operator sets one up (docs/operating.md#keeping-the-key-in-an-hsm).
 */
export async function startSoftHsm(tokenLabel = 'sealpost-test'): Promise<SoftHsm> {
  const dir = await mkdtemp(join(tmpdir(), 'sealpost-softhsm-'));
  const conf = join(dir, 'softhsm2.conf');
  await mkdir(join(dir, 'tokens'));
  await writeFile(
    conf,
    `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  const pin = '4711-test-pin';
  const pinFile = join(dir, 'user.pin');
  await writeFile(pinFile, `${pin}\n`, { mode: 0o600 });
  const env = { ...process.env, SOFTHSM2_CONF: conf };
  await run(
    'softhsm2-util',
    ['--init-token', '--free', '--label', tokenLabel, '--pin', pin, '--so-pin', '0815-test-so-pin'],
    { env },
  );
  return {
    conf,
    tokenLabel,
    pinFile,
    async addKey(label, options = {}) {
      // SoftHSM reads SOFTHSM2_CONF when initialised: this process opens the token for as long as it takes.
      const before = process.env.SOFTHSM2_CONF;
      process.env.SOFTHSM2_CONF = conf;
      const pkcs11js = await loadPkcs11();
      const pkcs11 = new pkcs11js.PKCS11();
      pkcs11.load(SOFTHSM_MODULE);
      pkcs11.C_Initialize();
      try {
        const slot = pkcs11
          .C_GetSlotList(true)
          .find((entry) => pkcs11.C_GetTokenInfo(entry).label.trim() === tokenLabel);
        if (!slot) throw new Error(`no SoftHSM token labelled ${tokenLabel}`);
        const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
        pkcs11.C_Login(session, pkcs11js.CKU_USER, pin);
        pkcs11.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
          { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
          { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
          { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
          { type: pkcs11js.CKA_LABEL, value: label },
          { type: pkcs11js.CKA_TOKEN, value: true },
          { type: pkcs11js.CKA_PRIVATE, value: true },
          { type: pkcs11js.CKA_SENSITIVE, value: true },
          { type: pkcs11js.CKA_EXTRACTABLE, value: false },
          { type: pkcs11js.CKA_ENCRYPT, value: options.encrypt ?? true },
          { type: pkcs11js.CKA_DECRYPT, value: true },
        ]);
        pkcs11.C_Logout(session);
        pkcs11.C_CloseSession(session);
      } finally {
        pkcs11.C_Finalize();
        if (before === undefined) delete process.env.SOFTHSM2_CONF;
        else process.env.SOFTHSM2_CONF = before;
      }
    },
    env(keys) {
      return {
        SOFTHSM2_CONF: conf,
        SEAL_KEY_PKCS11_MODULE: SOFTHSM_MODULE,
        SEAL_KEY_PKCS11_SLOT: tokenLabel,
        SEAL_KEY_PKCS11_PIN_FILE: pinFile,
        SEAL_KEY_PKCS11_KEYS: keys,
      };
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}
