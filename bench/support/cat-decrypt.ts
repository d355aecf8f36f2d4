import type { Agent } from 'node:http';
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DecryptStream } from '../../src/seal/crypto/message-cipher.ts';

/**
 * The reader benchmark's bare read: POST `url` (the IPFS proxy's /api/v0/cat of a sealed message), the
 * answer decrypted with `key` as it arrives, each plaintext chunk handed to `onChunk`.
 */
export function catDecrypted(
  url: string,
  options: { agent: Agent; authorization: string; key: Buffer },
  onChunk: (chunk: Buffer) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      agent: options.agent,
      headers: { authorization: options.authorization },
    });
    req.on('response', (res) => {
      pipeline(
        res,
        new DecryptStream(options.key),
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            onChunk(chunk);
            done();
          },
        }),
      ).then(() => resolve(), reject);
    });
    req.on('error', reject);
    req.end();
  });
}
