import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Static } from 'typebox';
import { Value } from 'typebox/value';
import { RecipientSealedSchema, SealedViewSchema } from '../../contracts/seal.ts';
import { AppError } from '../../kernel/errors.ts';

/** GET {SEAL_URL}/v1/sealed/{id}: the sealed-message record as the seal service (B) keeps it. */
export type SealedRecord = Static<typeof SealedViewSchema>;
/** GET {SEAL_URL}/v1/recipients/{email}/sealed: one recipient's sealed messages, newest first. */
export type RecipientSealed = Static<typeof RecipientSealedSchema>['sealed'];

/** Sealed-message ids as they may appear in our URLs; anything else is never sent on to B. */
export const MESSAGE_ID_PATTERN = '^[A-Za-z0-9_-]{1,128}$';
const MESSAGE_ID = new RegExp(MESSAGE_ID_PATTERN);

const TIMEOUT_MS = 30_000;

/**
 * The seal service's API as the auth service uses it (services talk over HTTP only), with the service
 * token. Any failure is a 502 error object for our client; B's own message is logged, not passed on.
 */
export class SealClient {
  constructor(
    private readonly options: {
      baseUrl: string;
      serviceToken: string;
      timeoutMs?: number;
      /** The most content() holds in memory: SEAL_MAX_MESSAGE_SIZE, the most B seals. */
      maxContentBytes?: number;
    },
  ) {}

  /** The sealed messages addressed to `email`, newest first (at most `limit`). */
  async sealedFor(email: string, limit: number): Promise<RecipientSealed> {
    const response = await this.get(
      `/v1/recipients/${encodeURIComponent(email)}/sealed?limit=${Math.min(Math.max(1, limit), 200)}`,
    );
    if (response.status !== 200) throw await upstreamError(response, 'list the sealed messages of a recipient');
    const answer: unknown = await response.json().catch(() => undefined);
    if (!Value.Check(RecipientSealedSchema, answer))
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected list');
    return answer.sealed;
  }

  /** The record, or undefined when B does not know the id. */
  async sealed(id: string): Promise<SealedRecord | undefined> {
    if (!MESSAGE_ID.test(id)) return undefined;
    const response = await this.get(`/v1/sealed/${encodeURIComponent(id)}`);
    // B answers 400 for an id that is not of its shape (a truncated link): for us that message does not exist.
    if (response.status === 404 || response.status === 400) {
      await response.arrayBuffer().catch(() => undefined);
      return undefined;
    }
    if (response.status !== 200) throw await upstreamError(response, 'read the sealed message record');
    const record = (await response.json().catch(() => undefined)) as SealedRecord | undefined;
    if (!isRecord(record) || record.id !== id) {
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected record');
    }
    return record;
  }

  /**
   * The plaintext raw message, which B hands out only after its SHA-256 matched the seal. Anything but a 200
   * means there is nothing we may show (the reader shows that the seal holds: docs/design.md#reading). Held
   * whole in memory, so refused above `maxContentBytes` (SEAL_MAX_MESSAGE_SIZE: B seals nothing larger).
   */
  async content(id: string): Promise<Buffer> {
    // Read at once, so the time limit covers the whole message.
    const { stream, length } = await this.openContent(id, AbortSignal.timeout(this.options.timeoutMs ?? TIMEOUT_MS));
    const limit = this.options.maxContentBytes ?? Number.POSITIVE_INFINITY;
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      if (length !== undefined && length > limit) throw tooLarge(limit);
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > limit) throw tooLarge(limit);
        chunks.push(chunk);
      }
    } catch (error) {
      stream.destroy();
      if (error instanceof AppError) throw error;
      throw new AppError('upstream_failed', 502, 'The seal service broke off the sealed message; nothing is shown', {
        cause: error,
      });
    }
    return Buffer.concat(chunks, bytes);
  }

  /**
   * The same plaintext as a stream, for a reader of one part that need not hold the rest. B verifies the
   * whole content before its first byte (it spools and hashes it, then decrypts it again into the
   * answer), so every byte of a 200 is verified; a stream that breaks off midway is a transport failure,
   * which the stream reports as an error (B declares the length), never as a short but complete message.
   * The time limit covers the wait for B's answer only: the body then flows at the pace of our client.
   */
  async contentStream(id: string): Promise<{ stream: Readable; length: number | undefined }> {
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error('no answer from the seal service in time')),
      this.options.timeoutMs ?? TIMEOUT_MS,
    );
    try {
      const opened = await this.openContent(id, controller.signal);
      // Destroying the stream (our client went away) also ends the request to B.
      opened.stream.once('close', () => controller.abort());
      return opened;
    } finally {
      clearTimeout(timer);
    }
  }

  private async openContent(
    id: string,
    signal: AbortSignal,
  ): Promise<{ stream: Readable; length: number | undefined }> {
    if (!MESSAGE_ID.test(id)) throw new AppError('not_found', 404, 'No such sealed message');
    const response = await this.get(`/v1/sealed/${encodeURIComponent(id)}/content`, signal);
    if (response.status === 404) {
      await response.arrayBuffer().catch(() => undefined);
      throw new AppError('not_found', 404, 'The sealed message is no longer available');
    }
    if (response.status !== 200 || !response.body)
      throw await upstreamError(response, 'read and verify the sealed message');
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    return {
      stream: Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
      length: Number.isSafeInteger(declared) ? declared : undefined,
    };
  }

  private async get(path: string, signal?: AbortSignal): Promise<Response> {
    try {
      return await fetch(`${this.options.baseUrl}${path}`, {
        headers: { authorization: `Bearer ${this.options.serviceToken}` },
        redirect: 'error',
        signal: signal ?? AbortSignal.timeout(this.options.timeoutMs ?? TIMEOUT_MS),
      });
    } catch (error) {
      throw new AppError('upstream_failed', 502, 'The seal service is not reachable; try again later', {
        cause: error,
      });
    }
  }
}

function tooLarge(limit: number): AppError {
  return new AppError(
    'upstream_failed',
    502,
    `The sealed message is larger than SEAL_MAX_MESSAGE_SIZE (${limit} bytes) and cannot be shown`,
  );
}

async function upstreamError(response: Response, what: string): Promise<AppError> {
  const body = await response.text().catch(() => '');
  let reason = body.slice(0, 300);
  let broken = false;
  try {
    const parsed = JSON.parse(body) as { message?: unknown; errorCode?: unknown };
    if (typeof parsed.message === 'string') reason = `${parsed.errorCode ?? ''} ${parsed.message}`.trim();
    // B's answer for content that does not match its seal (also from a B that still says upstream_failed).
    broken =
      response.status === 502 &&
      (parsed.errorCode === 'seal_broken' ||
        (parsed.errorCode === 'upstream_failed' &&
          typeof parsed.message === 'string' &&
          /failed verification/.test(parsed.message)));
  } catch {
    // not an error object: keep the start of the body for the log
  }
  const cause = new Error(`seal service answered HTTP ${response.status}: ${reason}`);
  // Final, unlike the failures below: the reader must see a broken seal, never "try again".
  if (broken)
    return new AppError(
      'seal_broken',
      502,
      'The sealed content failed verification against its seal; nothing is shown',
      { cause },
    );
  return new AppError('upstream_failed', 502, `The seal service could not ${what}; nothing is shown`, { cause });
}

/** seal_broken with the CID of the sealed record, for the reader to show which seal broke. */
export function withSealCid(error: unknown, cid: string): unknown {
  if (!(error instanceof AppError) || error.errorCode !== 'seal_broken') return error;
  return new AppError('seal_broken', 502, `${error.message} (IPFS CID ${cid})`, {
    cause: error.cause,
    details: { cid },
  });
}

/** The seal service's answer, checked against its own schema (src/contracts/seal.ts) before any field is used. */
function isRecord(value: unknown): value is SealedRecord {
  return Value.Check(SealedViewSchema, value);
}
