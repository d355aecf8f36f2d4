import { Readable } from 'node:stream';
import type { Static } from 'typebox';
import { Value } from 'typebox/value';
import { SealResponseSchema } from '../../contracts/seal.ts';
import { DeliveryError, X_DIAGNOSTIC } from './types.ts';

/** The seal service's answer to POST /v1/seal (201, or 200 when that envelope was sealed before). */
export type SealedMessage = Static<typeof SealResponseSchema>;

/**
 * Sealing a large message adds it to IPFS and pins it on every cluster, each call with its own timeout
 * (30 s by default) on the seal service's side; this bounds the whole exchange from here.
 */
export const SEAL_TIMEOUT_MS = 120_000;

/**
 * 4xx answers that say nothing about the message: our token or SEAL_URL is wrong (an operator fixes
 * it; failing the mail meanwhile would bounce good messages), or the service asks us to come back.
 */
const RETRYABLE_4XX = new Set([401, 403, 404, 408, 425, 429]);

/**
 * The seal service's HTTP API as the exchange uses it (services talk over HTTP only:
 * docs/design.md#services). POST {SEAL_URL}/v1/seal with the raw message streamed as the body; the envelope
 * id makes the call idempotent (the same id gives the same sealed record), so a retry after a lost answer is
 * safe.
 */
export class SealClient {
  constructor(private readonly options: { baseUrl: string; serviceToken: string; timeoutMs?: number }) {}

  async seal(envelopeId: string, recipients: string[], body: Readable): Promise<SealedMessage> {
    const url = `${this.options.baseUrl}/v1/seal`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.options.serviceToken}`,
          'content-type': 'message/rfc822',
          'x-sealpost-envelope-id': envelopeId,
          // The RCPT TO list: it adds the Bcc recipients, whom the headers do not name.
          'x-sealpost-envelope-recipients': recipients.join(', '),
        },
        body: Readable.toWeb(body) as unknown as RequestInit['body'],
        duplex: 'half',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? SEAL_TIMEOUT_MS),
      } as RequestInit);
    } catch (error) {
      const reason =
        error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
      throw new DeliveryError(false, `seal service unreachable: ${reason}`, {
        diagnostic: `${X_DIAGNOSTIC}; seal service unreachable: ${reason}`,
        cause: error,
      });
    } finally {
      // The request is over either way; a body the server did not read must not hold the payload stream open.
      body.destroy();
    }

    const text = await response.text().catch(() => '');
    if (response.status === 200 || response.status === 201) {
      const sealed = parseSealed(text);
      if (!sealed) {
        throw new DeliveryError(false, `seal service answered ${response.status} with an unexpected body`, {
          diagnostic: `${X_DIAGNOSTIC}; unexpected answer from the seal service`,
        });
      }
      return sealed;
    }
    const message = errorMessage(text) ?? response.statusText;
    const permanent = response.status >= 400 && response.status < 500 && !RETRYABLE_4XX.has(response.status);
    throw new DeliveryError(permanent, `seal service answered ${response.status}: ${message}`, {
      status: permanent ? (response.status === 413 ? '5.3.4' : '5.6.0') : '4.0.0',
      diagnostic: `${X_DIAGNOSTIC}; seal service ${response.status} ${message}`
        .replace(/\s*[\r\n]+\s*/g, ' ')
        .slice(0, 900),
    });
  }

  /**
   * Tells the seal service's trail that `recipient`'s notification was handed to the relay or the outbox
   * (docs/specification.md#trail: `notified`). Throws on any failure; the caller only logs it.
   */
  async reportNotified(sealedId: string, recipient: string): Promise<void> {
    const response = await fetch(`${this.options.baseUrl}/v1/sealed/${encodeURIComponent(sealedId)}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.options.serviceToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event: 'notified', recipient }),
      signal: AbortSignal.timeout(EVENT_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.status !== 201 && response.status !== 200)
      throw new Error(`seal service answered ${response.status} to the event notified`);
  }
}

/** A trail report waits this long at most: it is never what a delivery waits for. */
const EVENT_TIMEOUT_MS = 10_000;

/** The answer, checked against the seal service's own schema (src/contracts/seal.ts) before any field is used. */
function parseSealed(text: string): SealedMessage | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return Value.Check(SealResponseSchema, value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The `message` of the spec's error object, when the body is one. */
function errorMessage(text: string): string | undefined {
  try {
    const value = JSON.parse(text) as { message?: unknown };
    return typeof value.message === 'string' ? value.message : undefined;
  } catch {
    return text.trim().slice(0, 200) || undefined;
  }
}
