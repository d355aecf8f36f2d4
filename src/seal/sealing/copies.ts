import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { ClusterError, type ClusterClient } from '../clusters/client.ts';
import { CONTENT_OVERHEAD_BYTES, DecryptStream, IntegrityError } from '../crypto/message-cipher.ts';

/**
 * What became of one cluster's copy of sealed content when it was read:
 * - `damaged`: the cluster served bytes that fail verification (AES-GCM authentication, or the plaintext's size
 *   or SHA-256): the copy is there and wrong;
 * - `missing`: the cluster's IPFS API answered without the content (not found, its daemon down, a short answer);
 * - `unreachable`: the IPFS API did not answer (refused, timed out, TLS).
 */
export type CopyState = 'damaged' | 'missing' | 'unreachable';

export interface CopyProblem {
  /** `host:port` of the cluster, as in pin records. */
  cluster: string;
  state: CopyState;
  /** Why, in the words of the check or of the cluster. */
  reason: string;
}

export function copyProblem(cluster: string, error: unknown): CopyProblem {
  const reason = error instanceof Error ? error.message : String(error);
  if (error instanceof IntegrityError) return { cluster, state: 'damaged', reason };
  const state =
    error instanceof ClusterError && (error.kind === 'http' || error.kind === 'protocol') ? 'missing' : 'unreachable';
  return { cluster, state, reason };
}

/** `cluster a:9094 damaged; cluster b:9094 missing (...)`: each copy's state, for an error message or a log. */
export function describeCopies(problems: CopyProblem[]): string {
  return problems.map((copy) => `cluster ${copy.cluster}: ${copy.state} (${copy.reason})`).join('; ');
}

export interface SealFacts {
  /** What to cat: the CID, or /ipfs/<cid>/<file> for wrapped content. */
  path: string;
  key: Buffer;
  sha256: string;
  size: number;
}

/**
 * Reads one cluster's copy and checks it against its seal without keeping it: the ciphertext streams through
 * AES-256-GCM and SHA-256 and is dropped, so a scrub of large messages holds no more than a chunk. Throws an
 * IntegrityError for a damaged copy, a ClusterError for one the cluster did not give. `offline` asks Kubo not
 * to fetch missing blocks from its peers (its global `offline` option, passed on by the cluster's proxy): the
 * check is of this cluster's own copy, not of whatever copy the swarm has.
 */
export async function verifyCopy(cluster: ClusterClient, facts: SealFacts, offline: boolean): Promise<void> {
  const expected = facts.size + CONTENT_OVERHEAD_BYTES;
  const decrypt = new DecryptStream(facts.key);
  const hash = createHash('sha256');
  let plain = 0;
  let received = 0;
  let failure: unknown;
  decrypt.on('data', (chunk: Buffer) => {
    hash.update(chunk);
    plain += chunk.length;
  });
  decrypt.on('error', (error) => (failure ??= error));
  // The sink never fails a write: a failure there would read as the cluster's, not as a copy that is wrong.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (received <= expected && failure === undefined) decrypt.write(chunk);
      done();
    },
  });
  await cluster.cat(facts.path, sink, offline);
  if (received > expected) {
    decrypt.destroy();
    throw new IntegrityError(`the copy has ${received} bytes, more than a ${facts.size}-byte message seals to`);
  }
  if (failure === undefined) {
    decrypt.end();
    await Promise.race([once(decrypt, 'end'), once(decrypt, 'error')]).catch(() => undefined);
    // 'end' comes only once the data is read: the listener above keeps it flowing.
  }
  if (failure !== undefined) {
    throw failure instanceof IntegrityError ? failure : new IntegrityError(String(failure), { cause: failure });
  }
  const digest = hash.digest('hex');
  if (plain !== facts.size || digest !== facts.sha256) {
    throw new IntegrityError(
      `plaintext SHA-256 ${digest} (${plain} bytes) does not match the sealed ${facts.sha256} (${facts.size} bytes)`,
    );
  }
}
