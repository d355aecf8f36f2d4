import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { ConfigError } from './config.ts';

/** DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE, all three or none. */
export interface DkimSettings {
  domain: string;
  selector: string;
  keyFile: string;
}

/**
 * The header fields signed (RFC 6376 §5.4.1's recommendation, as colon-separated names, which is how
 * mailauth takes them); only those present are signed.
 */
const SIGNED_HEADERS = [
  'From',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'In-Reply-To',
  'References',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'Content-Language',
  'Auto-Submitted',
].join(':');

export type DkimAlgorithm = 'rsa-sha256' | 'ed25519-sha256';

/**
 * Signs the messages Sealpost writes with DKIM (RFC 6376; Ed25519 keys as RFC 8463), relaxed/relaxed,
 * through mailauth (the same library the tests verify with, independently of this code path).
 */
export class DkimSigner {
  readonly algorithm: DkimAlgorithm;

  private constructor(
    readonly domain: string,
    readonly selector: string,
    private readonly privateKey: string,
    key: KeyObject,
  ) {
    this.algorithm = key.asymmetricKeyType === 'ed25519' ? 'ed25519-sha256' : 'rsa-sha256';
  }

  /** Reads and checks the key; a file that is missing or not a usable key stops start-up naming the variable. */
  static async load(settings: DkimSettings): Promise<DkimSigner> {
    let pem: string;
    try {
      pem = await readFile(settings.keyFile, 'utf8');
    } catch (error) {
      throw new ConfigError([`DKIM_PRIVATE_KEY_FILE=${settings.keyFile} cannot be read: ${(error as Error).message}`]);
    }
    let key: KeyObject;
    try {
      key = createPrivateKey(pem);
    } catch {
      throw new ConfigError([
        `DKIM_PRIVATE_KEY_FILE=${settings.keyFile} is not a PEM private key ` +
          '(expected an RSA or Ed25519 key, as `sealpost dkim-key generate` writes)',
      ]);
    }
    const type = key.asymmetricKeyType;
    if (type !== 'rsa' && type !== 'ed25519') {
      throw new ConfigError([
        `DKIM_PRIVATE_KEY_FILE=${settings.keyFile} holds a ${type ?? 'unknown'} key; DKIM signs with RSA or Ed25519`,
      ]);
    }
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (type === 'rsa' && bits < 1024) {
      // RFC 8301 §3.2: verifiers must not accept RSA keys under 1024 bits.
      throw new ConfigError([
        `DKIM_PRIVATE_KEY_FILE=${settings.keyFile} holds a ${bits}-bit RSA key; ` +
          'DKIM needs at least 1024 bits (2048 recommended)',
      ]);
    }
    return new DkimSigner(
      settings.domain,
      settings.selector,
      key.export({ type: 'pkcs8', format: 'pem' }).toString(),
      key,
    );
  }

  /** The DKIM-Signature header line(s) for a complete message (CRLF-terminated). */
  async signature(message: Buffer | Readable): Promise<Buffer> {
    const result = await dkimSign(message, {
      // One signing time for the whole signature: without it mailauth reads the clock twice (for the header
      // it hashes and for the one it writes, rounding each), and a signature made across a half-second
      // boundary carries a t= that differs from the one signed, which no verifier accepts (~1 in 200).
      signTime: new Date(),
      canonicalization: 'relaxed/relaxed',
      algorithm: this.algorithm,
      headerList: SIGNED_HEADERS as unknown as string[],
      signatureData: [
        {
          signingDomain: this.domain,
          selector: this.selector,
          privateKey: this.privateKey,
          algorithm: this.algorithm,
          canonicalization: 'relaxed/relaxed',
        },
      ],
    } as unknown as Parameters<typeof dkimSign>[1]);
    if (result.errors?.length)
      throw new Error(`DKIM signing failed: ${result.errors.map((e) => (e as Error).message ?? String(e)).join('; ')}`);
    return Buffer.from(result.signatures);
  }

  /** The message with its DKIM-Signature in front. */
  async sign(message: Buffer): Promise<Buffer> {
    return Buffer.concat([await this.signature(message), message]);
  }

  /**
   * Whether a From domain is ours to sign: DKIM_DOMAIN or one of its subdomains (relaxed DMARC
   * alignment, RFC 7489 §3.1.1), like OpenDKIM's signing table for the organisation's own mail.
   */
  aligned(fromDomain: string | undefined): boolean {
    const domain = fromDomain?.toLowerCase().replace(/\.$/, '');
    return domain !== undefined && (domain === this.domain || domain.endsWith(`.${this.domain}`));
  }
}

/** Loads the signer when DKIM is configured; undefined (no signing) when it is not. */
export async function loadDkimSigner(settings: DkimSettings | undefined): Promise<DkimSigner | undefined> {
  return settings ? DkimSigner.load(settings) : undefined;
}
