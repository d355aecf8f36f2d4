import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import type { Static } from 'typebox';
import { Compile } from 'typebox/compile';
import {
  ConfirmedMobileSchema,
  EndedAnswerSchema,
  RecipientSchema,
  RecipientSealedSchema,
  SEAL_HEADER,
  SealedViewSchema,
  SealFactsSchema,
  SenderSealedListSchema,
  SenderSealedSchema,
  type TrailEventBodySchema,
  TrailEventAnswerSchema,
  TrailSchema,
} from '../../contracts/seal.ts';
import { AppError, type ErrorDetails } from '../../kernel/errors.ts';
import { endedError, isEndCode } from './end.ts';

/** GET {SEAL_URL}/v1/sealed/{id}: the sealed-message record as the seal service (B) keeps it. */
export type SealedRecord = Static<typeof SealedViewSchema>;
/** GET {SEAL_URL}/v1/recipients/{email}/sealed: one recipient's sealed messages, newest first. */
export type RecipientSealed = Static<typeof RecipientSealedSchema>['sealed'];
/** The seal B verified content against (its X-Sealpost-Seal header): what the reader shows beside it. */
export type SealFacts = Static<typeof SealFactsSchema>;
/** GET {SEAL_URL}/v1/sealed/{id}/recipients/{email}: one recipient as B keeps them. */
export type SealedRecipient = Static<typeof RecipientSchema>;
/** POST {SEAL_URL}/v1/sealed/ended: which of the ids asked about have ended, and how. */
export type EndedMessages = Static<typeof EndedAnswerSchema>['ended'];

/** GET {SEAL_URL}/v1/senders/{sender}/sealed/{id}: a sealed message as its sender sees it. */
export type SenderMessage = Static<typeof SenderSealedSchema>;
/** GET {SEAL_URL}/v1/senders/{sender}/sealed: the sender's sealed messages, newest first. */
export type SenderSealed = Static<typeof SenderSealedListSchema>;
/** The trail of a sealed message as JSON (docs/specification.md#trail). */
export type Trail = Static<typeof TrailSchema>;
/** One event A reports to B's trail: POST {SEAL_URL}/v1/sealed/{id}/events (`client` masked by maskClient). */
export type TrailReport = Static<typeof TrailEventBodySchema>;

/** Sealed-message ids as they may appear in our URLs; anything else is never sent on to B. */
export const MESSAGE_ID_PATTERN = '^[A-Za-z0-9_-]{1,128}$';
const MESSAGE_ID = new RegExp(MESSAGE_ID_PATTERN);

const TIMEOUT_MS = 30_000;

/**
 * B's answers are checked against its own schemas (src/contracts/seal.ts) before any field is used, by
 * validators compiled once: Value.Check interprets the schema on every call, about ten times slower, and
 * every read of a message checks a record.
 */
const CHECK = {
  sealedView: Compile(SealedViewSchema),
  recipientSealed: Compile(RecipientSealedSchema),
  sealFacts: Compile(SealFactsSchema),
  recipient: Compile(RecipientSchema),
  ended: Compile(EndedAnswerSchema),
  eventAnswer: Compile(TrailEventAnswerSchema),
  senderMessage: Compile(SenderSealedSchema),
  senderSealed: Compile(SenderSealedListSchema),
  trail: Compile(TrailSchema),
  confirmedMobile: Compile(ConfirmedMobileSchema),
};
const SEAL_BROKEN = 'The sealed content failed verification against its seal; nothing is shown';

/**
 * The seal service's API as the auth service uses it (services talk over HTTP only), with the service
 * token. Any failure is a 502 error object for our client; B's own message is logged, not passed on.
 */
export class SealClient {
  /**
   * Keep-alive connections to B, through node:http rather than fetch: on the reader's read
   * (bench/reader.ts) fetch's web streams, and turning its body back into a Node stream, cost more CPU
   * than the request itself. Idle sockets close after 5 s, well before B's keep-alive timeout (Fastify:
   * 72 s), so a request never goes out on a connection B is closing.
   */
  private readonly agent: http.Agent;

  constructor(
    private readonly options: {
      baseUrl: string;
      serviceToken: string;
      timeoutMs?: number;
      /** The most content() holds in memory: SEAL_MAX_MESSAGE_SIZE, the most B seals. */
      maxContentBytes?: number;
    },
  ) {
    const keepAlive = { keepAlive: true, timeout: 5_000 };
    this.agent = options.baseUrl.startsWith('https:') ? new https.Agent(keepAlive) : new http.Agent(keepAlive);
  }

  /** The sealed messages addressed to `email`, newest first (at most `limit`), after `after` (a page's last). */
  async sealedFor(email: string, limit: number, after?: { sealedAt: string; id: string }): Promise<RecipientSealed> {
    const query = new URLSearchParams({ limit: String(Math.min(Math.max(1, limit), 200)) });
    if (after) {
      query.set('before', after.sealedAt);
      query.set('beforeId', after.id);
    }
    const response = await this.get(`/v1/recipients/${encodeURIComponent(email)}/sealed?${query}`);
    if (response.statusCode !== 200) throw await upstreamError(response, 'list the sealed messages of a recipient');
    const answer = await readJson(response);
    if (!CHECK.recipientSealed.Check(answer))
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected list');
    return answer.sealed;
  }

  /** The record, or undefined when B does not know the id. */
  async sealed(id: string): Promise<SealedRecord | undefined> {
    if (!MESSAGE_ID.test(id)) return undefined;
    const response = await this.get(`/v1/sealed/${encodeURIComponent(id)}`);
    // B answers 400 for an id that is not of its shape (a truncated link): for us that message does not exist.
    if (response.statusCode === 404 || response.statusCode === 400) {
      response.resume();
      return undefined;
    }
    if (response.statusCode !== 200) throw await upstreamError(response, 'read the sealed message record');
    const record = await readJson(response);
    if (!CHECK.sealedView.Check(record) || record.id !== id) {
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected record');
    }
    return record;
  }

  /**
   * One recipient of the message, asked of B now (a cheap check, for requests that do not read the content):
   * undefined when the address is no recipient or B does not know the id; a 410 (message_expired,
   * message_withdrawn) once the message ended for everyone or was withdrawn for this recipient.
   */
  async recipient(id: string, email: string): Promise<SealedRecipient | undefined> {
    if (!MESSAGE_ID.test(id)) return undefined;
    const response = await this.get(`/v1/sealed/${encodeURIComponent(id)}/recipients/${encodeURIComponent(email)}`);
    if (response.statusCode === 404 || response.statusCode === 400) {
      response.resume();
      return undefined;
    }
    if (response.statusCode !== 200) throw await upstreamError(response, 'look up the recipient of a sealed message');
    const recipient = await readJson(response);
    if (!CHECK.recipient.Check(recipient))
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected recipient');
    // A B that names the withdrawal in its answer rather than answering 410: the same end for this reader.
    if (recipient.withdrawnAt !== undefined) throw endedError('message_withdrawn', { endedAt: recipient.withdrawnAt });
    return recipient;
  }

  /** Which of `ids` (at most 500) have ended for everyone, for deleting their reply drafts. */
  async ended(ids: string[]): Promise<EndedMessages> {
    if (ids.length === 0) return [];
    const response = await this.send('POST', '/v1/sealed/ended', { ids });
    if (response.statusCode !== 200) throw await upstreamError(response, 'tell which sealed messages ended');
    const answer = await readJson(response);
    if (!CHECK.ended.Check(answer))
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected list of ended messages');
    return answer.ended;
  }

  /**
   * Records one event in the message's trail (docs/specification.md#trail); `first`: B had none of this event
   * for this recipient before.
   */
  async reportEvent(id: string, report: TrailReport): Promise<{ first: boolean }> {
    if (!MESSAGE_ID.test(id)) throw new AppError('not_found', 404, 'No such sealed message');
    const response = await this.send('POST', `/v1/sealed/${encodeURIComponent(id)}/events`, report);
    if (response.statusCode !== 201 && response.statusCode !== 200)
      throw await upstreamError(response, `record the event ${report.event}`);
    const answer = await readJson(response);
    if (!CHECK.eventAnswer.Check(answer))
      throw new AppError('upstream_failed', 502, 'The seal service answered an event with something unexpected');
    return { first: answer.first };
  }

  /**
   * Tells B the number a recipient proved with a code to it (a mobile change, or a number added after an email
   * sign-in): B uses it for the recipient's later messages (docs/design.md#contacts).
   */
  async confirmMobile(email: string, mobile: string, messageId: string, replaces?: string): Promise<void> {
    const response = await this.send('PUT', `/v1/recipients/${encodeURIComponent(email)}/mobile`, {
      mobile,
      messageId,
      ...(replaces ? { replaces } : {}),
    });
    if (response.statusCode !== 200) throw await upstreamError(response, 'record the confirmed mobile number');
    if (!CHECK.confirmedMobile.Check(await readJson(response)))
      throw new AppError(
        'upstream_failed',
        502,
        'The seal service answered a confirmed number with something unexpected',
      );
  }

  /** The sealed messages `sender` sent, newest first, as B pages and searches them. */
  async senderSealed(sender: string, query: { limit?: number; before?: string; q?: string }): Promise<SenderSealed> {
    const params = new URLSearchParams();
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    if (query.before !== undefined) params.set('before', query.before);
    if (query.q !== undefined) params.set('q', query.q);
    const search = params.size > 0 ? `?${params}` : '';
    const response = await this.get(`${senderPath(sender)}${search}`);
    const answer = await senderAnswer(response, 'list the sealed messages of a sender');
    if (!CHECK.senderSealed.Check(answer))
      throw new AppError('upstream_failed', 502, "The seal service answered with an unexpected sender's list");
    return answer;
  }

  /** One message `sender` sent; 404 not_found for any other (another sender's message is not told apart). */
  async senderMessage(sender: string, id: string): Promise<SenderMessage> {
    const response = await this.get(senderPath(sender, id));
    const answer = await senderAnswer(response, 'read a sealed message of a sender');
    if (!CHECK.senderMessage.Check(answer) || answer.id !== id)
      throw new AppError('upstream_failed', 502, "The seal service answered with an unexpected sender's message");
    return answer;
  }

  /** The sender withdraws their message, for everyone or for one recipient. */
  async senderWithdraw(sender: string, id: string, body: { reason: string; recipient?: string }): Promise<void> {
    const response = await this.send('POST', `${senderPath(sender, id)}/withdraw`, body);
    await senderAnswer(response, 'withdraw a sealed message');
  }

  /** The sender moves their message's end date (B answers 400 beyond SEAL_MAX_EXPIRY, 410 once it ended). */
  async senderExpiry(sender: string, id: string, body: { expiresAt: string }): Promise<void> {
    const response = await this.send('PUT', `${senderPath(sender, id)}/expiry`, body);
    await senderAnswer(response, 'change the end date of a sealed message');
  }

  /** The trail of a message `sender` sent: JSON, or B's CSV as text. */
  async senderTrail(sender: string, id: string, format: 'json'): Promise<Trail>;
  async senderTrail(sender: string, id: string, format: 'csv'): Promise<string>;
  async senderTrail(sender: string, id: string, format: 'json' | 'csv'): Promise<Trail | string> {
    const accept = format === 'csv' ? 'text/csv' : 'application/json';
    const response = await this.send('GET', `${senderPath(sender, id)}/trail`, undefined, undefined, { accept });
    if (format === 'csv') {
      if (response.statusCode !== 200) await senderAnswer(response, "read a sealed message's trail");
      return (await readBody(response)).toString('utf8');
    }
    const answer = await senderAnswer(response, "read a sealed message's trail");
    if (!CHECK.trail.Check(answer) || answer.id !== id)
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected trail');
    return answer;
  }

  /**
   * The plaintext raw message, which B hands out only after its SHA-256 matched the seal. Anything but a 200
   * means there is nothing we may show (the reader shows that the seal holds: docs/design.md#reading). Held
   * whole in memory, so refused above `maxContentBytes` (SEAL_MAX_MESSAGE_SIZE: B seals nothing larger).
   * `recipient` is the reader it is read for: B answers 410 once the message was withdrawn for them, as it
   * does for everyone once the message ended (docs/specification.md#end-dates).
   */
  async content(id: string, recipient: string): Promise<Buffer> {
    return (await this.read(id, recipient)).content;
  }

  /**
   * content() with the seal B verified it against (its X-Sealpost-Seal header), in one request. `seal` is
   * undefined when B sent none (a header too long, or a B from before it): sealed() has the same facts.
   */
  async read(id: string, recipient: string): Promise<{ content: Buffer; seal: SealFacts | undefined }> {
    // Read at once, so the time limit covers the whole message.
    const { stream, length, response } = await this.openContent(
      id,
      recipient,
      AbortSignal.timeout(this.options.timeoutMs ?? TIMEOUT_MS),
    );
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
      if (length !== undefined && bytes !== length) throw new Error(`${bytes} of the ${length} bytes B announced`);
    } catch (error) {
      stream.destroy();
      if (error instanceof AppError) throw error;
      throw new AppError('upstream_failed', 502, 'The seal service broke off the sealed message; nothing is shown', {
        cause: error,
      });
    }
    return { content: Buffer.concat(chunks, bytes), seal: sealFacts(response.headers[SEAL_HEADER], id) };
  }

  /**
   * The same plaintext as a stream, for a reader of one part that need not hold the rest. B verifies the
   * whole content before its first byte (it spools and hashes it, then decrypts it again into the
   * answer), so every byte of a 200 is verified; a stream that breaks off midway is a transport failure,
   * which the stream reports as an error (B declares the length), never as a short but complete message.
   * The time limit covers the wait for B's answer only: the body then flows at the pace of our client.
   */
  async contentStream(id: string, recipient: string): Promise<{ stream: Readable; length: number | undefined }> {
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error('no answer from the seal service in time')),
      this.options.timeoutMs ?? TIMEOUT_MS,
    );
    try {
      const opened = await this.openContent(id, recipient, controller.signal);
      // Destroying the stream (our client went away) also ends the request to B.
      opened.stream.once('close', () => controller.abort());
      return opened;
    } finally {
      clearTimeout(timer);
    }
  }

  private async openContent(
    id: string,
    recipient: string,
    signal: AbortSignal,
  ): Promise<{ stream: Readable; length: number | undefined; response: IncomingMessage }> {
    if (!MESSAGE_ID.test(id)) throw new AppError('not_found', 404, 'No such sealed message');
    const response = await this.get(
      `/v1/sealed/${encodeURIComponent(id)}/content?recipient=${encodeURIComponent(recipient)}`,
      signal,
    );
    // 400: an id not of B's shape (a truncated link), for us a message that does not exist, as in sealed().
    if (response.statusCode === 404 || response.statusCode === 400) {
      response.resume();
      throw new AppError('not_found', 404, 'The sealed message is no longer available');
    }
    if (response.statusCode !== 200) throw await upstreamError(response, 'read and verify the sealed message');
    const declared = Number(response.headers['content-length'] ?? Number.NaN);
    return { stream: response, length: Number.isSafeInteger(declared) ? declared : undefined, response };
  }

  /**
   * B's answer to a GET, its body still to read. `signal` ends the exchange, the body included; redirects
   * are not followed (not a 200: an upstream failure).
   */
  private get(path: string, signal?: AbortSignal): Promise<IncomingMessage> {
    return this.send('GET', path, undefined, signal);
  }

  /** A request with an optional JSON body; B's answer as get() has it. */
  private send(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    extraHeaders: Record<string, string> = {},
  ): Promise<IncomingMessage> {
    const url = new URL(`${this.options.baseUrl}${path}`);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(url, {
        method,
        agent: this.agent,
        headers: {
          ...extraHeaders,
          authorization: `Bearer ${this.options.serviceToken}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
        },
        signal: signal ?? AbortSignal.timeout(this.options.timeoutMs ?? TIMEOUT_MS),
      });
      // After the answer, errors reach its reader through the body stream; these listeners only keep a late
      // one (a timeout or a reset after the body was read) from becoming an uncaught exception.
      request.on('error', (error) =>
        reject(
          new AppError('upstream_failed', 502, 'The seal service is not reachable; try again later', { cause: error }),
        ),
      );
      request.on('response', (response: IncomingMessage) => {
        response.on('error', () => undefined);
        resolve(response);
      });
      request.end(payload);
    });
  }
}

/** B's sender API for `sender` (the address the session proved), and one message of it. */
function senderPath(sender: string, id?: string): string {
  const base = `/v1/senders/${encodeURIComponent(sender)}/sealed`;
  if (id === undefined) return base;
  if (!MESSAGE_ID.test(id)) throw new AppError('not_found', 404, 'No such sealed message');
  return `${base}/${encodeURIComponent(id)}`;
}

/**
 * The JSON of B's 2xx answer to a sender's request. 404 (no such message, or another sender's: B does not
 * tell them apart) is not_found; B's 400 (an end date out of bounds) is passed on with its message; 410 is the
 * message's end; anything else a 502.
 */
async function senderAnswer(response: IncomingMessage, what: string): Promise<unknown> {
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return readJson(response);
  if (status === 404) {
    response.resume();
    throw new AppError('not_found', 404, 'No such sealed message among those this sender sent');
  }
  if (status === 400) {
    const body = (await readJson(response)) as { message?: unknown } | undefined;
    const message = typeof body?.message === 'string' ? body.message : 'The seal service refused the request';
    throw new AppError('validation_failed', 400, message);
  }
  throw await upstreamError(response, what);
}

function tooLarge(limit: number): AppError {
  return new AppError(
    'upstream_failed',
    502,
    `The sealed message is larger than SEAL_MAX_MESSAGE_SIZE (${limit} bytes) and cannot be shown`,
  );
}

async function readBody(response: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of response as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The JSON body, or undefined when it does not come whole or does not parse. */
async function readJson(response: IncomingMessage): Promise<unknown> {
  try {
    return JSON.parse((await readBody(response)).toString('utf8'));
  } catch {
    return undefined;
  }
}

async function upstreamError(response: IncomingMessage, what: string): Promise<AppError> {
  const body = await readBody(response).then(
    (bytes) => bytes.toString('utf8'),
    () => '',
  );
  let reason = body.slice(0, 300);
  let broken = false;
  let cid: string | undefined;
  let ended: AppError | undefined;
  let copies: CopyState[] | undefined;
  try {
    const parsed = JSON.parse(body) as {
      message?: unknown;
      errorCode?: unknown;
      cid?: unknown;
      endedAt?: unknown;
      contact?: unknown;
      copies?: unknown;
    };
    if (typeof parsed.cid === 'string') cid = parsed.cid;
    copies = copyStates(parsed.copies);
    // The message ended (for everyone, or for the recipient asked about): passed on with when and whom to ask.
    if (response.statusCode === 410 && isEndCode(parsed.errorCode)) {
      ended = endedError(parsed.errorCode, {
        ...(typeof parsed.endedAt === 'string' ? { endedAt: parsed.endedAt } : {}),
        ...(typeof parsed.contact === 'string' ? { contact: parsed.contact } : {}),
      });
    }
    if (typeof parsed.message === 'string') reason = `${parsed.errorCode ?? ''} ${parsed.message}`.trim();
    // B's answer for content that does not match its seal (also from a B that still says upstream_failed).
    broken =
      response.statusCode === 502 &&
      (parsed.errorCode === 'seal_broken' ||
        (parsed.errorCode === 'upstream_failed' &&
          typeof parsed.message === 'string' &&
          /failed verification/.test(parsed.message)));
  } catch {
    // not an error object: keep the start of the body for the log
  }
  const cause = new Error(`seal service answered HTTP ${response.statusCode}: ${reason}`);
  if (ended) return ended;
  // Gone, without saying how: for the reader as for a message B no longer knows.
  if (response.statusCode === 410) return new AppError('not_found', 404, 'The sealed message is no longer available');
  // Final, unlike the failures below: the reader must see a broken seal, never "try again".
  if (broken) {
    const error = new AppError('seal_broken', 502, SEAL_BROKEN, { cause, ...(copies ? { details: { copies } } : {}) });
    // B names the CID in its error object; from a B that does not, the caller adds the record's.
    return cid ? withSealCid(error, cid) : error;
  }
  return new AppError('upstream_failed', 502, `The seal service could not ${what}; nothing is shown`, { cause });
}

/** seal_broken with the CID of the sealed record, for the reader to show which seal broke. */
export function withSealCid<T>(error: T, cid: string): T | AppError {
  if (!isSealBroken(error) || error.details.cid !== undefined) return error;
  return new AppError('seal_broken', 502, `${error.message} (IPFS CID ${cid})`, {
    cause: error.cause,
    details: { ...error.details, cid },
  });
}

type CopyState = NonNullable<ErrorDetails['copies']>[number];
const COPY_STATES = new Set(['damaged', 'missing', 'unreachable']);

/**
 * B's `copies` (each cluster's copy and why it did not serve), kept only as B's schema says it: the reader
 * page names them, so nothing else of B's answer reaches it.
 */
function copyStates(value: unknown): CopyState[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const copies = value.filter(
    (copy): copy is CopyState =>
      typeof copy === 'object' &&
      copy !== null &&
      typeof copy.cluster === 'string' &&
      copy.cluster.length <= 200 &&
      COPY_STATES.has(copy.state),
  );
  return copies.length > 0 ? copies.slice(0, 20).map(({ cluster, state }) => ({ cluster, state })) : undefined;
}

/** A broken seal: final, unlike the other failures to read. */
export function isSealBroken(error: unknown): error is AppError {
  return error instanceof AppError && error.errorCode === 'seal_broken';
}

/** B's X-Sealpost-Seal header, when it is there, decodes, fits B's schema and is about this message. */
function sealFacts(header: string | string[] | undefined, id: string): SealFacts | undefined {
  if (typeof header !== 'string') return undefined;
  try {
    const facts: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
    return CHECK.sealFacts.Check(facts) && facts.id === id ? facts : undefined;
  } catch {
    return undefined;
  }
}
