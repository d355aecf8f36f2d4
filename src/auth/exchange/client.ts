import type { Readable } from 'node:stream';
import type { MessageBody } from '../../contracts/exchange.ts';
import { AppError } from '../../kernel/errors.ts';

/** The envelope of a message handed to the exchange engine: `from` is what a reply rule's params.sender matches. */
export type ExchangeEnvelope = Pick<MessageBody, 'from' | 'to' | 'bcc'>;

/** A reply of a few tens of MiB must get through a slow link; past this the send fails and the draft stays. */
const TIMEOUT_MS = 10 * 60_000;

/**
 * The exchange engine's JSON inbound (POST {EXCHANGE_URL}/v1/messages, service token) as the auth
 * service uses it: a complete MIME message as `raw` (base64), the envelope beside it. The fields' types
 * come from the exchange's contract (src/contracts/exchange.ts); the fields used here are from/to/bcc/raw.
 *
 * The request body is streamed: the JSON around the message is written by hand and the message is
 * base64-encoded as it comes from the composer (which reads the attachments from the object store one
 * at a time), so this side holds a few chunks, never the whole reply. The exchange engine parses the
 * JSON body whole: it holds about 16/9 of the attachments' size while it stores the message (base64 of
 * base64), bounded by its own body limit (derived from SMTP_MAX_MESSAGE_SIZE) and, on our side, by
 * REPLY_MAX_TOTAL_SIZE.
 */
export class ExchangeClient {
  constructor(private readonly options: { baseUrl: string; serviceToken: string; timeoutMs?: number }) {}

  /** Submits the message; resolves with the envelope id once the engine has stored it (202). */
  async submitRaw(envelope: ExchangeEnvelope, message: Readable): Promise<{ envelopeId: string }> {
    let sourceError: unknown;
    const body = jsonWithRaw(envelope, message, (error) => (sourceError = error));
    let response: Response;
    try {
      response = await fetch(`${this.options.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.options.serviceToken}`, 'content-type': 'application/json' },
        body: body as unknown as RequestInit['body'],
        duplex: 'half',
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? TIMEOUT_MS),
      } as RequestInit);
    } catch (error) {
      message.destroy();
      // Our side failed while sending (an attachment could not be read): that error, not the engine's.
      if (sourceError !== undefined) throw sourceError;
      throw new AppError(
        'unavailable',
        503,
        'The exchange engine is not reachable; the reply was not sent and the draft is kept. Try again later',
        {
          cause: error,
        },
      );
    }
    const text = await response.text().catch(() => '');
    if (response.status === 202) {
      const accepted = parseJson(text) as { id?: unknown } | undefined;
      if (typeof accepted?.id === 'string') return { envelopeId: accepted.id };
      throw new AppError(
        'upstream_failed',
        502,
        'The exchange engine answered 202 without an envelope id; the draft is kept',
        {
          cause: new Error(text.slice(0, 300)),
        },
      );
    }
    const cause = new Error(`exchange engine answered HTTP ${response.status}: ${text.slice(0, 300)}`);
    if (response.status === 413) {
      // The engine's size limit (SMTP_MAX_MESSAGE_SIZE) is below this reply: the reader can remove files.
      throw new AppError(
        'upload_limit_reached',
        403,
        'The reply with its files is larger than the mail system accepts; remove a file and send again',
        { cause },
      );
    }
    if (response.status === 503) {
      throw new AppError(
        'unavailable',
        503,
        'The exchange engine cannot take the reply right now; the draft is kept. Try again later',
        { cause },
      );
    }
    throw new AppError('upstream_failed', 502, 'The exchange engine refused the reply; the draft is kept', { cause });
  }
}

/** `{"from":…,"to":[…],"bcc":[…],"raw":"<base64 of the message>"}`, produced as the message streams. */
async function* jsonWithRaw(
  envelope: ExchangeEnvelope,
  message: Readable,
  onError: (error: unknown) => void,
): AsyncGenerator<Buffer> {
  const head = JSON.stringify({
    from: envelope.from,
    to: envelope.to,
    ...(envelope.bcc?.length ? { bcc: envelope.bcc } : {}),
  });
  yield Buffer.from(`${head.slice(0, -1)},"raw":"`);
  // base64 works in groups of 3 bytes: a chunk's last 0-2 bytes wait for the next one.
  let carry = Buffer.alloc(0);
  try {
    for await (const chunk of message as AsyncIterable<Buffer>) {
      const bytes = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      const whole = bytes.length - (bytes.length % 3);
      if (whole > 0) yield Buffer.from(bytes.subarray(0, whole).toString('base64'));
      carry = Buffer.from(bytes.subarray(whole));
    }
  } catch (error) {
    onError(error);
    throw error;
  }
  yield Buffer.from(`${carry.toString('base64')}"}`);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
