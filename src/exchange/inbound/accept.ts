import { randomUUID } from 'node:crypto';
import { pipeline, type Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { AppError } from '../../kernel/errors.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import { senderKey } from '../rules/match.ts';
import type { RuleStore } from '../rules/store.ts';
import type { Channel, ExchangeTables } from '../tables.ts';
import type { OutboundStrategyName } from '../outbound/registry.ts';
import { createEnvelopeWriter, type NewEnvelope, type WrittenEnvelope } from './envelope-writer.ts';
import { crlfLineEnds, CrlfLineEndsStream } from './line-endings.ts';

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
  envelopeId: string;
  size: number;
  outbound: OutboundStrategyName[];
}

export const payloadKey = (envelopeId: string) => `exchange/payloads/${envelopeId}`;

/**
 * The one door every message enters by (SMTP and JSON alike), in the order docs/design.md#intake demands:
 * store the payload, then write the envelope row with its first status — and only then resolve, so
 * the caller acknowledges nothing that is not durable. The delivery rule is matched in the same
 * statement that writes the row (see createEnvelopeWriter); with no matching rule nothing is written,
 * the payload is deleted again, and accept() fails with RuleStore.match's 503. If the database refused
 * the row the payload is deleted again too; if the outcome of the write is unknown (connection lost) the
 * payload stays, and OrphanPayloadSweep deletes it once it is sure no row came. Failures of either store
 * are 503 AppErrors (the SMTP handler turns them into 451).
 */
export class MessageIntake {
  private readonly writeEnvelope: (envelope: NewEnvelope) => Promise<WrittenEnvelope>;
  private readonly acceptedListeners: Array<() => void> = [];

  constructor(
    private readonly deps: { db: Kysely<ExchangeTables>; objects: ObjectStore; rules: RuleStore; logger: Logger },
  ) {
    this.writeEnvelope = createEnvelopeWriter(deps.db);
  }

  async accept(message: IncomingMessage): Promise<AcceptedMessage> {
    const { objects, logger } = this.deps;
    const envelopeId = message.envelopeId ?? randomUUID();
    const key = payloadKey(envelopeId);

    let size: number;
    try {
      // A stream that already failed (sender gone, size limit passed) would never end for a driver
      // that only starts listening now: report its error instead of waiting for it.
      if (!Buffer.isBuffer(message.payload) && (message.payload.errored || message.payload.destroyed)) {
        throw message.payload.errored ?? new Error('The message stream was closed before it was stored');
      }
      size = (await objects.put(key, withCrlfLineEnds(message.payload), { contentType: 'message/rfc822' })).size;
    } catch (error) {
      await objects.delete(key).catch(() => {});
      // A payload stream that failed on its own terms (e.g. the size limit) is the caller's to report.
      if (error instanceof AppError && error.status !== 503) throw error;
      throw new AppError('unavailable', 503, 'Message storage is unavailable; try again later', { cause: error });
    }

    const deletePayload = () =>
      objects.delete(key).catch((cleanupError: unknown) => {
        logger.error({ err: cleanupError, envelopeId, key }, 'could not delete the payload of an envelope that was not written');
      });
    const envelope: NewEnvelope = {
      id: envelopeId,
      channel: message.channel,
      sender: message.sender,
      senderKey: senderKey(message.sender),
      recipients: message.recipients,
      size,
      payloadKey: key,
      isBounce: message.isBounce ?? false,
      body8bitmime: message.body8bitmime ?? false,
      smtputf8: message.smtputf8 ?? false,
    };
    // Twice at most: a rule created between the statement and match() below gets one more try.
    for (let attempt = 1; ; attempt++) {
      let written: WrittenEnvelope;
      try {
        written = await this.writeEnvelope(envelope);
      } catch (error) {
        // The payload goes only if the row certainly does not exist. Otherwise (the connection lost,
        // perhaps after the commit) deleting it could leave an envelope without payload, which would
        // bounce a message whose sender got 451 and sent again; OrphanPayloadSweep removes it later
        // if no row appears.
        if (statementRolledBack(error)) await deletePayload();
        else logger.warn({ err: error, envelopeId, key }, 'envelope write failed with its outcome unknown; the payload stays for the orphan sweep');
        throw new AppError('unavailable', 503, 'Message database is unavailable; try again later', { cause: error });
      }
      if (written) {
        for (const listener of this.acceptedListeners) listener();
        return { envelopeId, size, outbound: written.outbound };
      }
      // No rule matched: RuleStore.match says why (no rule at all, or none for this channel and sender).
      try {
        await this.route(message);
      } catch (error) {
        await deletePayload();
        throw error;
      }
      if (attempt >= 2) {
        await deletePayload();
        throw new AppError('unavailable', 503, 'Delivery rules changed while the message was being accepted; try again later');
      }
    }
  }

  /** Called after each message is durable (envelope committed), before accept() resolves. */
  onAccepted(listener: () => void): void {
    this.acceptedListeners.push(listener);
  }

  /**
   * Whether a message of this channel and sender would find a rule (a 503 AppError when not): the
   * SMTP server asks at MAIL FROM, so that "no rule" is answered before the body is sent.
   */
  async checkRoute(channel: IncomingMessage['channel'], sender: string): Promise<void> {
    await this.route({ channel, sender });
  }

  private async route(message: Pick<IncomingMessage, 'channel' | 'sender'>) {
    try {
      return await this.deps.rules.match(message.channel, message.sender);
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw new AppError('unavailable', 503, 'Message database is unavailable; try again later', { cause: error });
    }
  }
}

/**
 * The server answered the statement with an error of severity ERROR: its implicit transaction was
 * rolled back (PostgreSQL turns any error after a commit record into a PANIC, which ends the connection).
 * Data errors (kernel isDataError), a missing table, a lock timeout are such errors; a lost connection,
 * a FATAL termination or a client-side timeout leave the outcome unknown.
 */
function statementRolledBack(error: unknown): boolean {
  return (error as { severity?: unknown } | undefined)?.severity === 'ERROR';
}

/** The message as it is stored: with CRLF line ends (line-endings.ts). */
function withCrlfLineEnds(payload: Readable | Buffer): Readable | Buffer {
  if (Buffer.isBuffer(payload)) return crlfLineEnds(payload);
  // pipeline passes a failure of the source (the size limit, the sender gone) on to what the store reads.
  return pipeline(payload, new CrlfLineEndsStream(), () => {});
}
