import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { domainToASCII } from 'node:url';
import { parseArgs } from 'node:util';

const USAGE =
  'Usage: sealpost dkim-key generate --domain example.org ' +
  '--selector sealpost --out FILE [--type rsa|ed25519] [--bits 2048]\n';

/**
 * `sealpost dkim-key generate`: writes a DKIM private key (PEM, mode 0600, never over an existing
 * file) and prints the DNS TXT record to publish and the variables to set, as `opendkim-genkey` does.
 */
/** A DNS name (RFC 1035 §2.3.1 labels, IDN as punycode); `needsDot`: a domain, not a single label. */
function isDomainName(name: string, needsDot = true): boolean {
  const ascii = domainToASCII(name);
  if (!ascii || ascii.length > 253 || (needsDot && !ascii.includes('.'))) return false;
  return ascii.split('.').every((label) => /^[a-z0-9_](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(label));
}

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
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`sealpost dkim-key: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { domain, selector, out, type } = values;
  const bits = Number(values.bits);
  const problem = !domain
    ? '--domain is required (the domain that signs, e.g. example.org)'
    : !isDomainName(domain)
      ? `--domain ${JSON.stringify(domain)} is not a domain name (letters, digits, hyphens; dots between labels)`
      : !selector
        ? '--selector is required (the name of the key in DNS, e.g. sealpost2026)'
        : !isDomainName(selector, false)
          ? `--selector ${JSON.stringify(selector)} is not a DNS name (letters, digits, hyphens)`
          : !out
            ? '--out is required (the file the private key is written to)'
            : type !== 'rsa' && type !== 'ed25519'
              ? `--type ${JSON.stringify(type)}: expected rsa or ed25519`
              : !Number.isInteger(bits) || bits < 1024 || bits > 8192
                ? // RFC 8301 §3.2: verifiers must refuse RSA keys under 1024 bits; 2048 is what they expect.
                  `--bits ${values.bits}: an RSA key has 1024 to 8192 bits (RFC 8301: verifiers refuse ` +
                  'keys under 1024 bits); 2048 is the usual choice'
                : undefined;
  if (problem !== undefined || !domain || !selector || !out) {
    process.stderr.write(`sealpost dkim-key: ${problem}\n${USAGE}`);
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
