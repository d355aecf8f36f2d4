import type { Readable } from 'node:stream';
import type { OutboundStrategyName } from './outbound/strategy-names.ts';
import type { Channel } from './tables.ts';

/**
 * Where the intake hands mail to delivery, and delivery hands its bounces back: the room below both
 * (inbound/ implements it, delivery/ uses it), so that neither imports the other.
 */

export interface IncomingMessage {
  channel: Channel;
  /** Envelope sender; '' for the null sender <>. */
  sender: string;
  recipients: string[];
  payload: Readable | Buffer;
  /** A bounce we generated ourselves: routed straight to smtp and never bounced again. */
  isBounce?: boolean;
  /** The message holds 8-bit data (SMTP: MAIL FROM ... BODY=8BITMIME, RFC 6152): the relay declares it again. */
  body8bitmime?: boolean;
  /** The message needs SMTPUTF8 (RFC 6531: UTF-8 addresses or headers): the relay declares it again. */
  smtputf8?: boolean;
  /** The id to give the envelope, when the caller needs it before the payload is written (the SMTP
   * server's Received header names it); a fresh UUID otherwise. */
  envelopeId?: string;
}

export interface AcceptedMessage {
  /** The first envelope's id (the one the SMTP server named in its Received header). */
  envelopeId: string;
  size: number;
  /** The first envelope's outbound strategies. */
  outbound: OutboundStrategyName[];
  /** Every envelope, when the recipients fell to different rules and the message was split. */
  parts?: Array<{ envelopeId: string; outbound: OutboundStrategyName[] }>;
}

/** The intake as delivery sees it (MessageIntake). */
export interface Intake {
  /** Makes a message durable (payload, then its envelope row); resolves only then. */
  accept(message: IncomingMessage): Promise<AcceptedMessage>;
  /** Called after each message is durable and due, before accept() resolves: delivery claims it at once. */
  onAccepted(listener: () => void): void;
  /** Whether a message came in a moment ago: delivery then keeps to its share and defers its deletions. */
  recentlyBusy(): boolean;
}

export const payloadKey = (envelopeId: string) => `exchange/payloads/${envelopeId}`;
