import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

const USAGE =
  'Usage: sealpost dkim-key generate --domain example.org ' +
  '--selector sealpost --out FILE [--type rsa|ed25519] [--bits 2048]\n';

/**
 * `sealpost dkim-key generate`: writes a DKIM private key (PEM, mode 0600, never over an existing
 * file) and prints the DNS TXT record to publish and the variables to set, as `opendkim-genkey` does.
 */
export async function dkimKeyGenerate(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        domain: { type: 'string' },
        selector: { type: 'string' },
        out: { type: 'string' },
        type: { type: 'string', default: 'rsa' },
        bits: { type: 'string', default: '2048' },
      },
    }));
  } catch (error) {
    process.stderr.write(`sealpost dkim-key: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { domain, selector, out, type } = values;
  const bits = Number(values.bits);
  if (
    !domain ||
    !selector ||
    !out ||
    (type !== 'rsa' && type !== 'ed25519') ||
    !Number.isInteger(bits) ||
    bits < 1024 ||
    bits > 8192
  ) {
    process.stderr.write(USAGE);
    return 2;
  }
  const pair =
    type === 'ed25519'
      ? generateKeyPairSync('ed25519', {
          publicKeyEncoding: { type: 'spki', format: 'der' },
          privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
        })
      : generateKeyPairSync('rsa', {
          modulusLength: bits,
          publicKeyEncoding: { type: 'spki', format: 'der' },
          privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
        });
  try {
    await writeFile(out, pair.privateKey, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    process.stderr.write(`sealpost dkim-key: cannot write ${out}: ${(error as Error).message}\n`);
    return 1;
  }
  // RFC 6376 §3.6.1: p= is the base64 of the SubjectPublicKeyInfo for RSA; RFC 8463 §4.2: the raw
  // 32-byte key for Ed25519 (the last 32 bytes of its SubjectPublicKeyInfo).
  const publicKey = type === 'ed25519' ? pair.publicKey.subarray(-32) : pair.publicKey;
  const record = `v=DKIM1; k=${type}; p=${publicKey.toString('base64')}`;
  // A TXT string holds at most 255 characters; longer records are split into several (RFC 7208 §3.3 style).
  const strings = record
    .match(/.{1,255}/g)!
    .map((part) => `"${part}"`)
    .join(' ');
  process.stdout.write(
    [
      `Wrote the private key to ${out} (keep it secret; mode 0600).`,
      '',
      'Publish this DNS record:',
      `${selector}._domainkey.${domain}. IN TXT ${strings}`,
      '',
      'Then set:',
      `DKIM_DOMAIN=${domain}`,
      `DKIM_SELECTOR=${selector}`,
      `DKIM_PRIVATE_KEY_FILE=${out}`,
      '',
    ].join('\n'),
  );
  return 0;
}
