import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { startSoftHsm, SOFTHSM_MODULE, type SoftHsm } from '../../../test/support/softhsm.ts';
import { loadPkcs11, openPkcs11Keys } from './pkcs11-key.ts';

/**
 * The HSM key versions on a real PKCS#11 token (Debian's SoftHSM2): wraps and unwraps in the token, and the token
 * reached again, without a restart, after its sessions ended, the library was reset, or the token was away.
 */
describe('HSM key versions on a SoftHSM2 token', () => {
  let hsm: SoftHsm;
  let confBefore: string | undefined;

  before(async () => {
    hsm = await startSoftHsm('sealpost-reconnect');
    await hsm.addKey('wrap-v1');
    confBefore = process.env.SOFTHSM2_CONF;
    process.env.SOFTHSM2_CONF = hsm.conf;
  });
  after(async () => {
    if (confBefore === undefined) delete process.env.SOFTHSM2_CONF;
    else process.env.SOFTHSM2_CONF = confBefore;
    await hsm?.close();
  });

  it('goes on wrapping after the sessions end, the library is reset and the token is away and back', async () => {
    const keys = await openPkcs11Keys({
      module: SOFTHSM_MODULE,
      slot: hsm.tokenLabel,
      pinFile: hsm.pinFile,
      keys: new Map([[1, 'wrap-v1']]),
    });
    try {
      const key = keys.versions[0]!.key;
      const aad = Buffer.from('message key of m1');
      const nonce = randomBytes(12);
      const sealed = key.encrypt(nonce, Buffer.from('the message key'), aad);
      const opens = () => assert.equal(key.decrypt(nonce, sealed, aad).toString(), 'the message key');
      opens();
      // A call's own failure is not a lost token: a wrong label fails (SoftHSM2 says CKR_GENERAL_ERROR), as it is.
      assert.throws(() => key.decrypt(nonce, sealed, Buffer.from('another label')), /Pkcs11Error: CKR_/);

      // Another handle on the same library, as an HSM restart or a token reinsertion ends them: every session ends.
      const binding = await loadPkcs11();
      const other = new binding.PKCS11();
      other.load(SOFTHSM_MODULE);
      const slot = other.C_GetSlotList(true).find((s) => other.C_GetTokenInfo(s).label.trim() === hsm.tokenLabel)!;
      (other as unknown as { C_CloseAllSessions(slot: Buffer): void }).C_CloseAllSessions(slot);
      opens();
      assert.notEqual(key.encrypt(randomBytes(12), Buffer.from('new key'), aad).length, 0, 'wraps again too');

      // The library reset under the service (a network HSM's client after a restart).
      other.C_Finalize();
      opens();

      // The token away (SoftHSM2 cannot initialise without its token folder): each call fails naming the setting,
      // until it is back; then it works without a restart.
      other.C_Finalize();
      const tokens = join(dirname(hsm.conf), 'tokens');
      await rename(tokens, `${tokens}.away`);
      assert.throws(opens, /SEAL_KEY_PKCS11_MODULE=\/usr\/lib\/softhsm\/libsofthsm2.so: the token failed/);
      assert.throws(opens, /SEAL_KEY_PKCS11_MODULE=.*: the token failed/, 'tried again, and failing again');
      await rename(`${tokens}.away`, tokens);
      opens();
    } finally {
      keys.close();
    }
  });
});
