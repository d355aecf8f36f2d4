import { describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { loadConfig } from '../cli/config.ts';
import { ConfigError } from './config.ts';
import { DkimSigner } from './dkim.ts';

describe('DKIM configuration', () => {
  it('takes DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE together, and nothing signs without them', () => {
    assert.equal(loadConfig({}).exchange.dkim, undefined);
    const config = loadConfig({
      DKIM_DOMAIN: 'Example.ORG.',
      DKIM_SELECTOR: 's2026',
      DKIM_PRIVATE_KEY_FILE: '/etc/sealpost/dkim.pem',
    });
    assert.deepEqual(config.exchange.dkim, {
      domain: 'example.org',
      selector: 's2026',
      keyFile: '/etc/sealpost/dkim.pem',
    });
    assert.deepEqual(config.auth.dkim, config.exchange.dkim, 'auth signs its email codes with the same key');
    assert.throws(
      () => loadConfig({ DKIM_DOMAIN: 'example.org' }),
      (error: unknown) =>
        error instanceof ConfigError && /DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE are missing/.test(error.message),
    );
    assert.throws(
      () => loadConfig({ DKIM_DOMAIN: 'not a domain', DKIM_SELECTOR: 's', DKIM_PRIVATE_KEY_FILE: 'k' }),
      /DKIM_DOMAIN/,
    );
    assert.throws(
      () => loadConfig({ DKIM_DOMAIN: 'example.org', DKIM_SELECTOR: 'a b', DKIM_PRIVATE_KEY_FILE: 'k' }),
      /DKIM_SELECTOR/,
    );
  });

  it('refuses a key file missing, not a key, too short or of another kind, naming DKIM_PRIVATE_KEY_FILE', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-dkim-key-'));
    try {
      const file = (name: string) => join(dir, name);
      await writeFile(file('junk.pem'), 'not a key\n');
      await writeFile(
        file('short.pem'),
        generateKeyPairSync('rsa', { modulusLength: 768 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
      );
      await writeFile(
        file('ec.pem'),
        generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
      );
      await writeFile(
        file('rsa.pem'),
        generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }),
      );
      for (const [name, why] of [
        ['missing.pem', /cannot be read/],
        ['junk.pem', /is not a PEM private key/],
        ['short.pem', /768-bit RSA key; DKIM needs at least 1024 bits/],
        ['ec.pem', /holds a ec key/],
      ] as const) {
        await assert.rejects(
          DkimSigner.load({ domain: 'example.org', selector: 's', keyFile: file(name) }),
          (error: unknown) => {
            assert.ok(error instanceof ConfigError, name);
            assert.match(error.message, new RegExp(`DKIM_PRIVATE_KEY_FILE=${file(name).replaceAll('.', '\\.')}`), name);
            assert.match(error.message, why, name);
            return true;
          },
        );
      }
      // A PKCS#1 RSA key (what `openssl genrsa` writes) is as good as PKCS#8.
      assert.equal(
        (await DkimSigner.load({ domain: 'example.org', selector: 's', keyFile: file('rsa.pem') })).algorithm,
        'rsa-sha256',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('signs for DKIM_DOMAIN and its subdomains only', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-dkim-key-'));
    try {
      await writeFile(
        join(dir, 'ed.pem'),
        generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }),
      );
      const signer = await DkimSigner.load({ domain: 'example.org', selector: 's', keyFile: join(dir, 'ed.pem') });
      assert.deepEqual(
        ['example.org', 'Mail.Example.org', 'example.org.', 'badexample.org', 'example.com', undefined].map((domain) =>
          signer.aligned(domain),
        ),
        [true, true, true, false, false, false],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  it('signs with one signing time, so a signature made while the clock moves still verifies', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-dkim-key-'));
    try {
      const keys = {
        rsa: generateKeyPairSync('rsa', { modulusLength: 2048 }),
        ed25519: generateKeyPairSync('ed25519'),
      };
      for (const [kind, { privateKey, publicKey }] of Object.entries(keys)) {
        await writeFile(join(dir, `${kind}.pem`), privateKey.export({ type: 'pkcs8', format: 'pem' }));
        const signer = await DkimSigner.load({
          domain: 'example.org',
          selector: 's',
          keyFile: join(dir, `${kind}.pem`),
        });
        const message = Buffer.from(
          'From: a@example.org\r\nTo: b@example.com\r\nSubject: Hi\r\n' +
            'Date: Mon, 7 Dec 2026 03:00:00 +0000\r\n\r\nHello\r\n',
        );
        // Every reading of Date.now() is a second after the one before: any two readings give different
        // seconds, as two readings across a (half-)second boundary do in about one signature in 200.
        let now = Date.now();
        const clock = mock.method(Date, 'now', () => (now += 1000));
        let signed: Buffer;
        try {
          signed = await signer.sign(message);
        } finally {
          clock.mock.restore();
        }
        const der = publicKey.export({ type: 'spki', format: 'der' });
        // An Ed25519 record holds the raw 32-byte key (RFC 8463 §4.2), the end of its SPKI form.
        const p = (kind === 'ed25519' ? der.subarray(der.length - 32) : der).toString('base64');
        const record = `v=DKIM1; k=${kind === 'ed25519' ? 'ed25519' : 'rsa'}; p=${p}`;
        const result = await dkimVerify(signed, {
          resolver: (async (name: string) => {
            if (name === 's._domainkey.example.org') return [[record]];
            throw Object.assign(new Error(`no record for ${name}`), { code: 'ENOTFOUND' });
          }) as never,
        });
        assert.deepEqual(
          result.results.map((r: { status: { result: string } }) => r.status.result),
          ['pass'],
          kind,
        );
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
