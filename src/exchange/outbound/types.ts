import type { Readable } from 'node:stream';
import type { SharedConfig } from '../../kernel/config.ts';
import type { DkimSigner } from '../../kernel/dkim.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ExchangeConfig } from '../config.ts';
import type { BounceReport, Envelope } from '../tables.ts';

export type FailedRecipient = BounceReport['recipients'][number];

/**
 * What an outbound strategy reports when it delivered: recipients refused one by one while others were
 * accepted (a relay answering 550 to one RCPT TO). The strategy counts as done; those recipients are
 * reported to the sender in a bounce at once (per-recipient retries are the relay's job).
 */
export interface OutboundResult {
  rejected: FailedRecipient[];
  /** For the status history: the relay's reply, the sealed-message id. */
  detail?: string;
}

/**
 * The stored raw message of the envelope being delivered. Called, it opens a fresh stream each time; the
 * strategy must consume or destroy what it opens.
 */
export interface OpenPayload {
  (): Promise<Readable>;
  /**
   * The whole message when it is small enough to hold (RECENT_PAYLOAD_MAX, like the intake's cache), read
   * once per attempt and shared by every strategy and every open; undefined for a larger one, which is
   * only ever streamed.
   */
  bytes(): Promise<Buffer | undefined>;
}

/**
 * One outbound strategy at work (docs/design.md#delivery): one interface, one file per strategy, so that a
 * new strategy is a new file and one line in the registry.
 * Failures are thrown as DeliveryError; anything else thrown is treated as temporary. A retry calls
 * deliver() again for the same envelope, so what it does must bear being repeated (at-least-once, like
 * all delivery here).
 */
export interface OutboundStrategy {
  deliver(envelope: Envelope, openPayload: OpenPayload): Promise<OutboundResult | void>;
}

/** A message as it goes out: the SMTP envelope and the raw bytes, never re-encoded. */
export interface OutgoingMail {
  /** MAIL FROM; '' sends the null sender `<>` (bounces). */
  envelope: { from: string; to: string[] };
  raw: Readable | Buffer;
  /** MAIL FROM ... BODY=8BITMIME (RFC 6152), when the relay offers it. */
  use8BitMime?: boolean;
  /** MAIL FROM ... SMTPUTF8 (RFC 6531), when the relay offers it. */
  smtputf8?: boolean;
}

export interface SendReport {
  accepted: string[];
  /** Recipients the relay refused while it accepted others (all refused is a DeliveryError). */
  rejected: FailedRecipient[];
  /** The relay's final reply, or the outbox file written. */
  response: string;
}

/**
 * Where outbound mail goes — the relayed messages of the smtp strategy, the seal strategy's notifications, and
 * (through the queue) bounces: the relay at OUTBOUND_SMTP_URL, or, when it is unset (the embedded
 * default), `.eml` files in `$SEALPOST_DATA_DIR/outbox`. Failures are DeliveryErrors.
 * Declared here, below its two kinds (mail-transport.ts), because every strategy is built with one.
 */
export interface MailTransport {
  readonly kind: 'relay' | 'outbox';
  /** For logs: the relay's address without credentials, or the outbox folder. */
  readonly description: string;
  send(mail: OutgoingMail): Promise<SendReport>;
  /** What the relay offers of 8BITMIME and SMTPUTF8 (the outbox takes anything). */
  capabilities(): Promise<RelayCapabilities>;
  close(): Promise<void>;
}

export interface RelayCapabilities {
  /** RFC 6152: the relay takes 8-bit message bodies. */
  eightBitMime: boolean;
  /** RFC 6531: the relay takes UTF-8 addresses and headers. */
  smtpUtf8: boolean;
}

/**
 * What a strategy is built from, once per engine instance: the configuration, and what strategies share
 * rather than open each for themselves (one relay connection pool, one DKIM key).
 */
export interface OutboundContext {
  config: SharedConfig;
  settings: ExchangeConfig;
  /** The relay (OUTBOUND_SMTP_URL), or the outbox without one. */
  transport: MailTransport;
  /** DKIM_*: for mail whose From is in DKIM_DOMAIN. */
  dkim?: DkimSigner;
  logger: Logger;
}

/**
 * An outbound strategy as the registry (registry.ts) lists it: the name rules use in
 * `configuration.outbound` and the metrics in their `strategy` label, a line for the API description,
 * and how to build it.
 */
export interface OutboundStrategyDefinition<Name extends string = string> {
  readonly name: Name;
  /** Markdown, one sentence: what a message routed to it undergoes (the rules API's OpenAPI text). */
  readonly description: string;
  create(context: OutboundContext): OutboundStrategy;
}

/** Keeps the literal name, which registry.ts checks against OutboundStrategyName. */
export function defineOutboundStrategy<const Name extends string>(
  definition: OutboundStrategyDefinition<Name>,
): OutboundStrategyDefinition<Name> {
  return definition;
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
