import type { Readable } from 'node:stream';
import type { BounceReport, Envelope, OutboundPath } from '../tables.ts';

export type FailedRecipient = BounceReport['recipients'][number];

/**
 * What an outbound path reports when it delivered: recipients refused one by one while others were
 * accepted (a relay answering 550 to one RCPT TO). The path counts as done; those recipients are
 * reported to the sender in a bounce at once (per-recipient retries are the relay's job).
 */
export interface OutboundResult {
  rejected: FailedRecipient[];
  /** For the status history: the relay's reply, the sealed-message id. */
  detail?: string;
}

/**
 * One outbound path (docs/design.md#delivery): one interface, one file per strategy, so that a new
 * path is a new file and changes no other.
 * `openPayload` opens a fresh stream of the stored raw message each time it is called; the path must
 * consume or destroy what it opens. Failures are thrown as DeliveryError; anything else thrown is
 * treated as temporary.
 */
export interface Outbound {
  readonly name: OutboundPath;
  deliver(envelope: Envelope, openPayload: () => Promise<Readable>): Promise<OutboundResult | void>;
}

export interface DeliveryErrorDetails {
  /** RFC 3463 status for the bounce; defaults to 5.0.0 (permanent) or 4.0.0 (temporary). */
  status?: string;
  /** RFC 3464 Diagnostic-Code with its type (`smtp; 550 ...`). */
  diagnostic?: string;
  remoteMta?: string;
  /** Only these recipients failed (e.g. one refused notification); default: all of the envelope's. */
  recipients?: FailedRecipient[];
  cause?: unknown;
}

/**
 * A delivery that did not happen. `permanent`: retrying cannot help (a 5xx from the relay, a 4xx from
 * the seal service for a malformed message), so the message fails and bounces at once; otherwise it is
 * retried with backoff.
 */
export class DeliveryError extends Error {
  readonly status: string;
  readonly diagnostic: string | undefined;
  readonly remoteMta: string | undefined;
  readonly recipients: FailedRecipient[] | undefined;

  constructor(
    readonly permanent: boolean,
    message: string,
    details: DeliveryErrorDetails = {},
  ) {
    super(message, { cause: details.cause });
    this.name = 'DeliveryError';
    this.status = details.status ?? (permanent ? '5.0.0' : '4.0.0');
    this.diagnostic = details.diagnostic;
    this.remoteMta = details.remoteMta;
    this.recipients = details.recipients;
  }
}

/** RFC 3464 diagnostic-type for failures that carry no SMTP reply (seal service, our own checks). */
export const X_DIAGNOSTIC = 'x-sealpost';
