import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Counter, type Registry } from 'prom-client';
import type { Clock } from '../../kernel/clock.ts';
import { AppError, notFound } from '../../kernel/errors.ts';
import type { Logger } from '../../kernel/logger.ts';
import { ClusterError, type ClusterClient } from '../clusters/client.ts';
import {
  CONTENT_OVERHEAD_BYTES,
  DecryptStream,
  decryptContent,
  encryptChunks,
  IntegrityError,
  newMessageKey,
} from '../crypto/message-cipher.ts';
import type { Keyring } from '../crypto/keyring.ts';
import { messageKeyLabel } from '../crypto/secret-box.ts';
import { sealEndDate } from '../../kernel/seal-expiry.ts';
import { copyProblem, describeCopies, type CopyProblem } from './copies.ts';
import { assertReadable } from './end-state.ts';
import { expiryOf } from './expires-header.ts';
import { parseHead, readHead } from './message-head.ts';
import type { OnRecord } from '../contacts/contact-store.ts';
import { messageFacts, type Recipient } from './recipients.ts';
import type { ClaimedPin, PinOutcome, SealedRecord, SealedStore } from './store.ts';

export interface SealInput {
  envelopeId: string;
  /** X-Sealpost-Envelope-Recipients: the SMTP envelope's RCPT TO list. */
  envelopeRecipients: string | undefined;
  /** The raw message. Not destroyed when sealing stops early: the caller drains or closes it. */
  body: AsyncIterator<Buffer>;
  /** Content-Length, when the client sent one: refused at once above the limit. */
  declaredLength: number | undefined;
}

export interface SealerOptions {
  store: SealedStore;
  /** The clusters in force, the primary first. */
  clusters: ClusterClient[];
  /** The master key versions: the current one wraps each new message key. */
  keyring: Keyring;
  maxMessageSize: number;
  /** Delay before a pin in error is tried again. */
  repinDelayMs: number;
  /** Delay before a pin the cluster accepted but does not hold yet is looked at again. */
  pinCheckMs: number;
  /** SEAL_DEFAULT_EXPIRY and SEAL_MAX_EXPIRY in milliseconds, when set. */
  expiry: { defaultMs?: number; maxMs?: number };
  /**
   * The numbers on record for recipients the sender gave none (the contacts directory, numbers confirmed since):
   * one lookup per message.
   */
  numbers: { onRecord(emailKeys: string[]): Promise<Map<string, OnRecord>> };
  /** Told of each new seal's pins that are not held yet, to follow them closely. */
  watchPins?: (pins: ClaimedPin[]) => void;
  clock: Clock;
  logger: Logger;
}

/**
 * Sealed content up to this size is read back in memory, larger content through a temporary file: at
 * 1 MiB a read holds about 2 MiB (ciphertext and plaintext) for the time of one answer, like the auth
 * service holding the message to parse it, and saves the file's creation, writes, two reads and a
 * second decryption (bench/reader.ts).
 */
export const IN_MEMORY_READ_BYTES = 1024 * 1024;

/** A verified plaintext: whole in memory, or a stream that removes the spooled ciphertext at its end. */
export interface VerifiedContent {
  record: SealedRecord;
  size: number;
  body: Buffer | Readable;
}

/**
 * Seals messages (docs/design.md#sealing) and reads them back verified (docs/design.md#reading).
 *
 * Sealing streams: the header section is read and checked first (so a message without From or
 * recipients is refused before anything reaches IPFS); then the whole raw message, header included,
 * flows through SHA-256 and AES-256-GCM straight into the primary cluster's /add. Nothing holds the
 * message whole; the size limit is counted on the way.
 */
export class Sealer {
  private readonly releasing = new Set<Promise<void>>();
  /** Copies a read could not use, by the cluster they came from: the read went on to the next copy. */
  private readonly copyFailures = new Counter({
    name: 'seal_read_copy_failures_total',
    help: "Reads of a cluster's copy of sealed content that failed: damaged (fails verification), missing, unreachable",
    labelNames: ['cluster', 'state'] as const,
    registers: [],
  });

  constructor(private readonly options: SealerOptions) {
    for (const cluster of options.clusters) this.copyFailures.inc({ cluster: cluster.name, state: 'damaged' }, 0);
  }

  registerMetrics(registry: Registry): void {
    registry.registerMetric(this.copyFailures);
  }

  private get primary(): ClusterClient {
    return this.options.clusters[0]!;
  }

  async seal(input: SealInput): Promise<{ created: boolean; record: SealedRecord }> {
    const { store, keyring, maxMessageSize, logger } = this.options;
    const existing = await store.findByEnvelope(input.envelopeId);
    if (existing) return { created: false, record: existing };
    if (input.declaredLength !== undefined && input.declaredLength > maxMessageSize) throw tooLarge(maxMessageSize);

    let size = 0;
    const count = (bytes: number) => {
      size += bytes;
      if (size > maxMessageSize) throw tooLarge(maxMessageSize);
    };
    const head = await readHead(input.body, count);
    const parsedHead = await parseHead(head);
    const facts = messageFacts(parsedHead, input.envelopeRecipients);
    facts.recipients = await this.withNumbersOnRecord(facts.recipients);
    const asked = expiryOf(parsedHead, new Date(this.options.clock.now()));
    if (facts.skipped.length > 0)
      logger.warn(
        { envelopeId: input.envelopeId, skipped: facts.skipped },
        'To/Cc entries that are not addresses were skipped',
      );
    if (facts.strayMobiles.length > 0) {
      logger.warn(
        { envelopeId: input.envelopeId, count: facts.strayMobiles.length },
        'X-Sealpost-Mobile headers for non-recipients were ignored',
      );
    }

    const id = randomUUID();
    const key = newMessageKey();
    const hash = createHash('sha256');
    let complete = false;
    const body = input.body;
    async function* plaintext(): AsyncGenerator<Buffer> {
      hash.update(head.buffered);
      yield head.buffered;
      if (!head.ended) {
        for (;;) {
          const next = await body.next();
          if (next.done) break;
          const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
          count(chunk.length);
          hash.update(chunk);
          yield chunk;
        }
      }
      complete = true;
    }

    const fileName = `${id}.sealed`;
    let added;
    try {
      added = await this.primary.add(encryptChunks(key, plaintext()), fileName, id);
    } catch (error) {
      throw clusterFailure(error, 'Adding the sealed message to the primary IPFS cluster failed');
    }
    if (!complete)
      throw new AppError(
        'upstream_failed',
        502,
        `IPFS cluster ${this.primary.name} answered /add before the whole message was sent`,
      );
    const sha256 = hash.digest('hex');

    const pins = await this.pinEverywhere(added.cid, id);
    const failed = pins.filter((pin) => pin.status === 'pin_error');
    // The content must be held somewhere before the seal counts: by a pin, or by /add's own pin.
    if (failed.length === pins.length && this.primary.settings.addParams?.noPin === true) {
      throw new AppError(
        'unavailable',
        503,
        `No IPFS cluster pinned the sealed message: ${failed.map((pin) => pin.error).join('; ')}`,
      );
    }

    let result: { created: boolean; record: SealedRecord };
    try {
      result = await store.insert(
        {
          id,
          envelopeId: input.envelopeId,
          cid: added.cid,
          wrapped: added.wrapped,
          fileName,
          sha256,
          size,
          wrappedKey: keyring.wrap(key, messageKeyLabel(id)),
          sender: facts.sender,
          subject: facts.subject,
          // From the moment of sealing: the record is written now (sealed_at), after IPFS took the content.
          expiresAt: sealEndDate(new Date(this.options.clock.now()), asked, this.options.expiry) ?? null,
        },
        facts.recipients,
        pins,
      );
    } catch (error) {
      this.releaseInBackground(added.cid, input.envelopeId, 'the sealed record could not be stored');
      throw error;
    }
    if (result.created) {
      this.options.watchPins?.(
        result.record.pins.map((pin) => ({
          sealedId: id,
          cluster: pin.cluster,
          cid: added.cid,
          status: pin.status,
          attempts: pin.attempts,
        })),
      );
      logger.info(
        {
          sealedId: id,
          envelopeId: input.envelopeId,
          cid: added.cid,
          size,
          recipients: facts.recipients.length,
          failedPins: failed.map((pin) => pin.cluster),
        },
        'message sealed',
      );
    } else {
      logger.warn(
        { envelopeId: input.envelopeId, cid: added.cid },
        'envelope was sealed concurrently by another request; its record stands',
      );
      if (result.record.message.cid !== added.cid)
        this.releaseInBackground(added.cid, input.envelopeId, 'another request sealed this envelope first');
    }
    return result;
  }

  /**
   * Which number applies to each recipient (docs/design.md#contacts): the sender's header first, then the number
   * the recipient confirmed since, then the directory's, else none (an email code). A header that still names the
   * number the recipient replaced by a mobile change gives way to the confirmed one: the change was proven with
   * both numbers after the sender was given the old one. The directory's language applies where the sender chose
   * none.
   */
  private async withNumbersOnRecord(recipients: Recipient[]): Promise<Recipient[]> {
    const records = await this.options.numbers.onRecord(recipients.map((recipient) => recipient.email.toLowerCase()));
    if (records.size === 0) return recipients;
    return recipients.map((recipient) => {
      const record = records.get(recipient.email.toLowerCase());
      if (!record) return recipient;
      const language = recipient.language ?? record.directory?.language ?? undefined;
      const number = numberOnRecord(recipient.mobile, record);
      return {
        ...recipient,
        ...(number ? { method: 'sms' as const, ...number } : {}),
        ...(language ? { language } : {}),
      };
    });
  }

  /** Resolves once the unpins of orphaned content started so far have ended (for shutdown). */
  async settle(): Promise<void> {
    while (this.releasing.size > 0) await Promise.allSettled([...this.releasing]);
  }

  /**
   * Unpins (best effort) content that was added and pinned but that no record points at: the loser
   * of two requests racing for one envelope, or a seal whose record failed to store. It runs behind
   * the answer, so a slow cluster does not hold the sender; a failure is logged and leaves the pin.
   */
  private releaseInBackground(cid: string, envelopeId: string, reason: string): void {
    const task = this.release(cid, envelopeId, reason)
      .catch((error: unknown) =>
        this.options.logger.warn({ cid, envelopeId, err: error }, 'unpinning orphaned content failed'),
      )
      .finally(() => this.releasing.delete(task));
    this.releasing.add(task);
  }

  private async release(cid: string, envelopeId: string, reason: string): Promise<void> {
    const { store, clusters, logger } = this.options;
    // A failed insert may still have committed (the connection broke on the way back): unpinning
    // content a record points at would lose the message, so a stored record is checked first.
    let record: SealedRecord | undefined;
    try {
      record = await store.findByEnvelope(envelopeId);
    } catch (error) {
      logger.warn(
        { cid, envelopeId, err: error },
        'orphaned content left pinned: could not check that no record points at it',
      );
      return;
    }
    if (record?.message.cid === cid) return;
    const failed: string[] = [];
    await Promise.all(
      clusters.map(async (cluster) => {
        try {
          await cluster.unpin(cid);
        } catch (error) {
          failed.push(cluster.name);
          logger.warn(
            { cluster: cluster.name, cid, envelopeId, err: error instanceof Error ? error.message : String(error) },
            'unpinning orphaned content failed on this cluster; it stays pinned there',
          );
        }
      }),
    );
    logger.info({ cid, envelopeId, reason, failed }, 'orphaned content unpinned');
  }

  /**
   * POST /pins/{cid} on every cluster, the primary included, at once, then one look at GET /pins/{cid}:
   * the cluster's 200 only means it accepted the pin, and IPFS pins later (or fails to). What is not
   * held yet is `pinning`, followed by the PinFollower until it is; a refusal is `pin_error`, retried.
   */
  private async pinEverywhere(cid: string, sealedId: string): Promise<PinOutcome[]> {
    const { logger, repinDelayMs, pinCheckMs } = this.options;
    return Promise.all(
      this.options.clusters.map(async (cluster): Promise<PinOutcome> => {
        try {
          await cluster.pin(cid, sealedId);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          logger.warn({ cluster: cluster.name, cid, err: message }, 'pin failed; it will be retried');
          return {
            cluster: cluster.name,
            status: 'pin_error',
            error: message,
            nextAttemptAt: new Date(this.options.clock.now() + repinDelayMs),
          };
        }
        const state = await cluster.pinStatus(cid).catch((error: unknown) => {
          logger.warn(
            { cluster: cluster.name, cid, err: error instanceof Error ? error.message : String(error) },
            'pin accepted; its status could not be read yet',
          );
          return { state: 'pinning' as const };
        });
        if (state.state === 'pin_error') {
          logger.warn(
            { cluster: cluster.name, cid, err: state.error },
            'pin accepted, then failed in IPFS; it will be retried',
          );
          return {
            cluster: cluster.name,
            status: 'pin_error',
            error: state.error,
            nextAttemptAt: new Date(this.options.clock.now() + repinDelayMs),
          };
        }
        return {
          cluster: cluster.name,
          status: state.state,
          ...(state.state === 'pinning' ? { nextAttemptAt: new Date(this.options.clock.now() + pinCheckMs) } : {}),
        };
      }),
    );
  }

  /**
   * The plaintext of a sealed message, verified before a byte of it is served. The ciphertext is
   * fetched by CID (clusters in order). Content up to IN_MEMORY_READ_BYTES is held in memory, decrypted
   * and hashed once and served from there; larger content is spooled to a private temporary file,
   * decrypted and hashed once, and only when the GCM tag and the SHA-256 both hold decrypted again into
   * the returned stream. Content that fails verification on one cluster is fetched from the next;
   * failing everywhere is an error.
   */
  async readVerified(id: string, recipientKey?: string): Promise<VerifiedContent> {
    const { store, keyring, logger } = this.options;
    const record = await store.get(id);
    const message = record.message;
    const recipient =
      recipientKey === undefined ? undefined : record.recipients.find((entry) => entry.email_key === recipientKey);
    if (recipientKey !== undefined && !recipient) throw notFound(`Not a recipient of sealed message ${id}`);
    assertReadable(message, recipient, this.options.clock.now());
    if (message.wrapped_key === null) {
      throw new AppError('internal', 500, `Sealed message ${id} has no key and no recorded end`);
    }
    let key: Buffer;
    try {
      key = keyring.unwrap(message.wrapped_key, messageKeyLabel(message.id));
    } catch (error) {
      throw new AppError(
        'internal',
        500,
        `The key of sealed message ${id} does not open: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    const path = message.wrapped ? `/ipfs/${message.cid}/${message.file_name}` : message.cid;
    const inMemory = message.size <= IN_MEMORY_READ_BYTES;
    const dir = inMemory ? undefined : await mkdtemp(join(tmpdir(), 'sealpost-read-'));
    const problems: CopyProblem[] = [];
    try {
      for (const cluster of this.options.clusters) {
        try {
          if (!dir) {
            const body = await readIntoMemory(cluster, path, key, message.sha256, message.size);
            this.servedAfter(id, cluster.name, problems);
            return { record, size: message.size, body };
          }
          const file = join(dir, 'content.sealed');
          await fetchInto(cluster, path, file);
          await verify(file, key, message.sha256, message.size);
          const stream = new PassThrough();
          pipeline(createReadStream(file), new DecryptStream(key), stream)
            .catch((error: unknown) =>
              logger.warn({ sealedId: id, err: error }, 'serving verified content stopped (client gone?)'),
            )
            .finally(() => void rm(dir, { recursive: true, force: true }));
          this.servedAfter(id, cluster.name, problems);
          return { record, size: message.size, body: stream };
        } catch (error) {
          const problem = copyProblem(cluster.name, error);
          problems.push(problem);
          this.copyFailures.inc({ cluster: cluster.name, state: problem.state });
          logger[problem.state === 'damaged' ? 'error' : 'warn'](
            { sealedId: id, cluster: cluster.name, cid: message.cid, state: problem.state, err: problem.reason },
            problem.state === 'damaged'
              ? "this cluster's copy of sealed content failed verification"
              : 'reading sealed content failed on this cluster',
          );
        }
      }
    } catch (error) {
      if (dir) await rm(dir, { recursive: true, force: true });
      throw error;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
    const copies = problems.map(({ cluster, state }) => ({ cluster, state }));
    if (problems.some((problem) => problem.state === 'damaged')) {
      logger.error(
        { sealedId: id, cid: message.cid, copies: problems },
        'sealed content failed verification: not served',
      );
      // Its own errorCode: a broken seal is final, unlike a cluster that failed for now (upstream_failed, unavailable).
      throw new AppError(
        'seal_broken',
        502,
        `The content of sealed message ${id} failed verification and is not served: ${describeCopies(problems)}`,
        { details: { cid: message.cid, copies } },
      );
    }
    throw new AppError(
      'unavailable',
      503,
      `The content of sealed message ${id} could not be read from any IPFS cluster: ${describeCopies(problems)}`,
      { details: { copies } },
    );
  }

  /** A copy served after others failed: said once, with the copies that did not serve. */
  private servedAfter(id: string, cluster: string, problems: CopyProblem[]): void {
    if (problems.length === 0) return;
    this.options.logger.warn(
      { sealedId: id, servedFrom: cluster, copies: problems },
      'sealed content served verified from another copy',
    );
  }
}

/**
 * The number on record that applies to a recipient given `headerMobile` (or none) by the sender, or undefined when
 * the header's stands (or there is none): the confirmed number where there is no header or the header names the
 * number it replaced, else the directory's where there is no header.
 */
function numberOnRecord(headerMobile: string | undefined, { confirmed, directory }: OnRecord) {
  if (confirmed && (!headerMobile || confirmed.replaces === headerMobile))
    return { mobile: confirmed.mobile, mobileSource: 'confirmed' as const };
  if (!headerMobile && directory) return { mobile: directory.mobile, mobileSource: 'directory' as const };
  return undefined;
}

/** The ciphertext from one cluster into `file`, closed (flushed) before it is read. */
async function fetchInto(cluster: ClusterClient, path: string, file: string): Promise<void> {
  const sink = createWriteStream(file, { mode: 0o600 });
  try {
    await cluster.cat(path, sink);
  } finally {
    if (!sink.closed) {
      const closed = once(sink, 'close');
      if (!sink.destroyed && !sink.writableFinished) sink.destroy();
      await closed;
    }
  }
}

/**
 * The ciphertext from one cluster into memory (at most the size the format gives for the sealed size:
 * more is not this content), decrypted and checked against the record in one go.
 */
async function readIntoMemory(
  cluster: ClusterClient,
  path: string,
  key: Buffer,
  sha256: string,
  size: number,
): Promise<Buffer> {
  const expected = size + CONTENT_OVERHEAD_BYTES;
  const chunks: Buffer[] = [];
  let bytes = 0;
  await cluster.cat(
    path,
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        // Bytes past the expected length are counted, not kept, so memory stays bounded; failing the write
        // instead would read as a cluster failure, not as content that does not match its seal.
        if (bytes <= expected) chunks.push(chunk);
        done();
      },
    }),
  );
  if (bytes > expected) {
    throw new IntegrityError(
      `sealed content of ${bytes} bytes is longer than a ${size}-byte message seals to (altered, or not this message)`,
    );
  }
  const plaintext = decryptContent(key, Buffer.concat(chunks, bytes));
  checkPlaintext(createHash('sha256').update(plaintext).digest('hex'), plaintext.length, sha256, size);
  return plaintext;
}

/** Decrypts the spooled ciphertext and checks the plaintext's size and SHA-256 against the record. */
async function verify(file: string, key: Buffer, sha256: string, size: number): Promise<void> {
  const hash = createHash('sha256');
  let bytes = 0;
  await pipeline(
    createReadStream(file),
    new DecryptStream(key),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        bytes += chunk.length;
        done();
      },
    }),
  );
  checkPlaintext(hash.digest('hex'), bytes, sha256, size);
}

function checkPlaintext(digest: string, bytes: number, sha256: string, size: number): void {
  if (bytes !== size || digest !== sha256) {
    throw new IntegrityError(
      `plaintext SHA-256 ${digest} (${bytes} bytes) does not match the sealed ${sha256} (${size} bytes)`,
    );
  }
}

function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', 413, `The message is larger than SEAL_MAX_MESSAGE_SIZE (${limit} bytes)`);
}

/** Cluster trouble is the sender's to retry (5xx); the message says which cluster and why. */
function clusterFailure(error: unknown, what: string): unknown {
  if (!(error instanceof ClusterError)) return error;
  const status = error.kind === 'http' && error.status !== undefined && error.status < 500 ? 502 : 503;
  return new AppError(status === 502 ? 'upstream_failed' : 'unavailable', status, `${what}: ${error.message}`, {
    cause: error,
  });
}
