import { randomUUID } from 'node:crypto';
import { pipeline, type Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { AppError } from '../../kernel/errors.ts';
import { readUpTo } from '../../kernel/read-up-to.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import { payloadKey, type AcceptedMessage, type IncomingMessage, type Intake } from '../handoff.ts';
import { RECENT_PAYLOAD_MAX, type RecentPayloads } from '../recent-payloads.ts';
import { byRule, decide, headerFields, needsHeaders, subjectStrip } from '../rules/criteria.ts';
import { senderKey } from '../rules/match.ts';
import type { RuleStore } from '../rules/store.ts';
import type { ExchangeTables } from '../tables.ts';
import { headerBlockOf, readHeaderBlock } from '../outbound/header-block.ts';
import { BodyTraits } from './body-traits.ts';
import { createEnvelopeWriter, type NewEnvelope, type WrittenEnvelope } from './envelope-writer.ts';
import { crlfLineEnds, CrlfLineEndsStream } from './line-endings.ts';
import { mobileRequired, recipientsWithoutNumber, type NumbersOnRecord } from './sms-required.ts';
import { writeParts, type EnvelopePart } from './split-writer.ts';

/** How long after a message came in the intake counts as busy: a few messages' time at 1 connection. */
const INTAKE_BUSY_WINDOW_MS = 100;

/**
 * The one door every message enters by (SMTP and JSON alike), in the order docs/design.md#intake demands,
 * and one way to make a message durable (docs/design.md#durability-of-intake): the payload is stored
 * first; once it is durable, one batched statement matches the delivery rule and writes the row `accepted`
 * with its `accepted` and `routed` status rows (createEnvelopeWriter). Only then does accept() resolve, so
 * the caller acknowledges nothing that is not durable, and no row ever names a payload whose put did not
 * end. With no matching rule nothing is written, the payload is deleted again, and accept() fails with
 * RuleStore.match's 503. A message that fails before its acknowledgement loses its payload again; what a
 * crash leaves behind (a payload without a row) is removed by OrphanPayloadSweep. Failures of either store
 * are 503 AppErrors (the SMTP handler turns them into 451).
 */
export class MessageIntake implements Intake {
  private readonly writeEnvelope: (envelope: NewEnvelope) => Promise<WrittenEnvelope>;
  private readonly acceptedListeners: Array<() => void> = [];
  private lastIntakeAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: {
      db: Kysely<ExchangeTables>;
      objects: ObjectStore;
      rules: RuleStore;
      logger: Logger;
      /** Keeps small accepted payloads for this instance's delivery. */
      recentPayloads?: RecentPayloads;
      /** SIGN_IN_REQUIRE_SMS: where to ask which recipients have a number on record; absent when off. */
      smsRequired?: NumbersOnRecord;
      /** Told of each message SIGN_IN_REQUIRE_SMS refused (a metric). */
      onMobileRequired?: (channel: IncomingMessage['channel']) => void;
    },
  ) {
    this.writeEnvelope = createEnvelopeWriter(deps.db);
  }

  /** Whether a message came in during the last INTAKE_BUSY_WINDOW_MS (delivery then keeps to its share). */
  recentlyBusy(): boolean {
    return performance.now() - this.lastIntakeAt < INTAKE_BUSY_WINDOW_MS;
  }

  async accept(message: IncomingMessage): Promise<AcceptedMessage> {
    this.lastIntakeAt = performance.now();
    // A stream that already failed (sender gone, size limit passed) would never end for a driver
    // that only starts listening now: report its error instead of waiting for it.
    if (!Buffer.isBuffer(message.payload) && (message.payload.errored || message.payload.destroyed)) {
      throw storageError(message.payload.errored ?? new Error('The message stream was closed before it was stored'));
    }
    const envelopeId = message.envelopeId ?? randomUUID();
    const traits = new BodyTraits();
    const body = await crlfBody(message.payload, traits);
    const { size, bytes } = await this.storePayload(payloadKey(envelopeId), body);
    if (this.deps.smsRequired && !message.isBounce) await this.requireNumbers(message, envelopeId, bytes);
    const envelope: NewEnvelope = {
      id: envelopeId,
      channel: message.channel,
      sender: message.sender,
      senderKey: senderKey(message.sender),
      recipients: message.recipients,
      payloadKey: payloadKey(envelopeId),
      isBounce: message.isBounce ?? false,
      // 8-bit content is declared on relay whether or not the client declared it (as Postfix flags it).
      body8bitmime: (message.body8bitmime ?? false) || traits.eightBit,
      longLines: traits.longLines,
      smtputf8: message.smtputf8 ?? false,
      size,
      acceptedDetail: acceptedDetail(message, size),
    };
    const written = await this.writeEnvelope(envelope).catch((error: unknown) => this.writeFailed(error, envelope));
    const parts = written
      ? [{ envelopeId, outbound: written.outbound }]
      : await this.writePerRecipient(message, envelope, bytes);
    if (bytes) for (const part of parts) this.deps.recentPayloads?.remember(part.envelopeId, bytes);
    for (const listener of this.acceptedListeners) listener();
    return { envelopeId, size, outbound: parts[0]!.outbound, ...(parts.length > 1 ? { parts } : {}) };
  }

  /**
   * The fast path wrote nothing: no rule matched by channel and sender, or the first that did has criteria.
   * The channel's rules are read now and matched per recipient (rules/criteria.ts), the header block parsed
   * only if a rule asks for the subject or a header. Recipients that fall to different rules become one
   * envelope each, each with its own copy of the payload (so delivery, retention and deletion stay per
   * envelope), all written in one transaction (writeParts). A recipient no rule takes refuses the whole
   * message. A rule changed meanwhile gets one more read; every payload goes unless the rows are written.
   */
  private async writePerRecipient(
    message: IncomingMessage,
    envelope: NewEnvelope,
    bytes: Buffer | undefined,
  ): Promise<NonNullable<AcceptedMessage['parts']>> {
    const copies: string[] = [];
    let writing = false;
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const parts = await this.planParts(message, envelope, bytes);
        for (const part of parts.slice(1)) {
          copies.push(part.payloadKey);
          await this.copyPayload(envelope.payloadKey, part.payloadKey, bytes);
        }
        writing = true;
        if (await writeParts(this.deps.db, parts)) {
          return parts.map((part) => ({ envelopeId: part.id, outbound: part.rule.outbound }));
        }
        writing = false;
        await this.deps.objects.deleteMany(copies.splice(0));
      }
    } catch (error) {
      // As writeFailed: a transaction whose outcome is unknown (the connection lost at its commit) may have
      // written the rows, so its payloads stay, delivered if it did, else removed by OrphanPayloadSweep.
      if (writing && !statementRolledBack(error)) {
        this.deps.logger.warn(
          { err: error, envelopeId: envelope.id, keys: [envelope.payloadKey, ...copies], step: 'insert' },
          'envelope parts write failed with its outcome unknown; the payloads stay for the orphan sweep',
        );
      } else {
        await this.deletePayloads([envelope.payloadKey, ...copies], envelope.id);
      }
      databaseUnavailable(error);
    }
    await this.deletePayloads([envelope.payloadKey, ...copies], envelope.id);
    throw new AppError(
      'unavailable',
      503,
      'Delivery rules changed while the message was being accepted; try again later',
    );
  }

  /** The envelopes a message becomes under the rules as they are now; a 503 AppError when a recipient has none. */
  private async planParts(
    message: IncomingMessage,
    envelope: NewEnvelope,
    bytes: Buffer | undefined,
  ): Promise<EnvelopePart[]> {
    const rules = await this.deps.rules.forChannel(message.channel);
    const headers = needsHeaders(rules) ? headerFields(await this.headerBlock(envelope.payloadKey, bytes)) : undefined;
    const decisions = decide(rules, { ...message, headers });
    const unmatched = decisions.find((decision) => !decision.rule);
    if (unmatched) {
      // RuleStore.match words "no rule at all" and "none for this channel and sender".
      await this.route(message);
      throw new AppError(
        'unavailable',
        503,
        `No delivery rule takes recipient ${unmatched.recipient} of this message ` +
          `(${unmatched.misses.join('; ')}); add one with POST /v1/config`,
      );
    }
    const groups = byRule(decisions);
    // The first part keeps the id the client is told; every part's history names all of them.
    const ids = groups.map((_, index) => (index === 0 ? envelope.id : randomUUID()));
    return groups.map(({ rule, recipients }, index) => {
      const id = ids[index]!;
      return {
        ...envelope,
        id,
        recipients,
        payloadKey: payloadKey(id),
        acceptedDetail:
          groups.length > 1
            ? `${envelope.acceptedDetail}; part ${index + 1} of ${groups.length} of message ${envelope.id}, ` +
              `split by rule (envelopes ${ids.join(', ')})`
            : envelope.acceptedDetail,
        rule: { id: rule.id, name: rule.name, updatedAt: rule.updated_at, outbound: rule.outbound },
        subjectStrip: subjectStrip(rule.criteria),
      };
    });
  }

  /**
   * SIGN_IN_REQUIRE_SMS: refuses (and removes the stored payload of) a message that would be sealed for a recipient
   * with no mobile number from any source (sms-required.ts); a 503 when the rules or the seal service cannot say.
   */
  private async requireNumbers(message: IncomingMessage, envelopeId: string, bytes: Buffer | undefined) {
    const key = payloadKey(envelopeId);
    let missing: string[];
    try {
      const rules = await this.deps.rules.forChannel(message.channel).catch(databaseUnavailable);
      const headers = headerFields(
        await this.headerBlock(key, bytes).catch((error: unknown) => {
          throw storageError(error);
        }),
      );
      missing = await recipientsWithoutNumber(message, headers, rules, this.deps.smsRequired!);
    } catch (error) {
      await this.deletePayload(key, envelopeId);
      throw error;
    }
    if (missing.length === 0) return;
    await this.deletePayload(key, envelopeId);
    this.deps.onMobileRequired?.(message.channel);
    throw mobileRequired(missing);
  }

  /** The stored message's header block: from memory, or from the start of the stored object. */
  private async headerBlock(key: string, bytes: Buffer | undefined): Promise<Buffer> {
    return bytes ? headerBlockOf(bytes) : readHeaderBlock(await this.deps.objects.get(key));
  }

  /** A second object of the same bytes, for a further envelope of a split message. */
  private async copyPayload(from: string, to: string, bytes: Buffer | undefined): Promise<void> {
    try {
      await this.deps.objects.put(to, bytes ?? (await this.deps.objects.get(from)), { contentType: 'message/rfc822' });
    } catch (error) {
      throw storageError(error);
    }
  }

  private async deletePayloads(keys: string[], envelopeId: string): Promise<void> {
    await this.deps.objects.deleteMany(keys).catch((cleanupError: unknown) => {
      this.deps.logger.error(
        { err: cleanupError, envelopeId, keys },
        'could not delete the payloads of a message that was not accepted',
      );
    });
  }

  /**
   * A row's statement failed, its payload stored. If it was committed, the row is delivered; so the payload
   * goes only when the statement certainly rolled back. When the outcome is unknown (the connection lost) it
   * stays: delivered if the row came, else removed by OrphanPayloadSweep.
   */
  private async writeFailed(error: unknown, envelope: NewEnvelope): Promise<never> {
    const { id: envelopeId, payloadKey: key } = envelope;
    if (statementRolledBack(error)) await this.deletePayload(key, envelopeId);
    else
      this.deps.logger.warn(
        { err: error, envelopeId, key, step: 'insert' },
        'envelope write failed with its outcome unknown; the payload stays for the orphan sweep',
      );
    databaseUnavailable(error);
  }

  /**
   * Stores the payload, its line ends CRLF already (withCrlfLineEnds); its size, and its bytes when it was
   * small enough to be read whole (one PutObject then, and RecentPayloads keeps it for delivery). On failure
   * nothing is left (best effort) and the error is a 503 AppError, or the stream's own.
   */
  private async storePayload(key: string, body: Readable | Buffer): Promise<{ size: number; bytes?: Buffer }> {
    try {
      const { size } = await this.deps.objects.put(key, body, { contentType: 'message/rfc822' });
      return { size, bytes: Buffer.isBuffer(body) ? body : undefined };
    } catch (error) {
      await this.deps.objects.delete(key).catch(() => {});
      throw storageError(error);
    }
  }

  private async deletePayload(key: string, envelopeId: string): Promise<void> {
    await this.deps.objects.delete(key).catch((cleanupError: unknown) => {
      this.deps.logger.error(
        { err: cleanupError, envelopeId, key },
        'could not delete the payload of an envelope that was not accepted',
      );
    });
  }

  /**
   * Called after each message is durable (payload stored, envelope row written) and due for a claim, before
   * accept() resolves: this instance's delivery claims it at once rather than at its next poll.
   */
  onAccepted(listener: () => void): void {
    this.acceptedListeners.push(listener);
  }

  /**
   * Whether a message of this channel and sender would find a rule (a 503 AppError when not): the
   * SMTP server asks at MAIL FROM, so that "no rule" is answered before the body is sent.
   */
  async checkRoute(channel: IncomingMessage['channel'], sender: string): Promise<void> {
    await this.deps.rules.hasRoute(channel, sender).catch(databaseUnavailable);
  }

  private async route(message: Pick<IncomingMessage, 'channel' | 'sender'>) {
    return this.deps.rules.match(message.channel, message.sender).catch(databaseUnavailable);
  }
}

/** A database step that failed: its own AppError when it is one (no rule), else "the database is unavailable". */
function databaseUnavailable(error: unknown): never {
  if (error instanceof AppError) throw error;
  throw new AppError('unavailable', 503, 'Message database is unavailable; try again later', { cause: error });
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

/**
 * A failure of the payload's put: the caller's stream failing on its own terms (e.g. the size limit) is the caller's to
 * report.
 */
function storageError(error: unknown): unknown {
  if (error instanceof AppError && error.status !== 503) return error;
  return new AppError('unavailable', 503, 'Message storage is unavailable; try again later', { cause: error });
}

/** withCrlfLineEnds; its failure (the sender gone, the size limit) reported as a put's is: nothing is stored yet. */
async function crlfBody(payload: Readable | Buffer, traits: BodyTraits): Promise<Readable | Buffer> {
  try {
    return await withCrlfLineEnds(payload, traits);
  } catch (error) {
    throw storageError(error);
  }
}

/** The `accepted` status row's detail. */
function acceptedDetail(message: IncomingMessage, size: number): string {
  return `${size} bytes over ${message.channel}${message.isBounce ? ', a bounce of ours' : ''}`;
}

/**
 * The message as it is stored, with CRLF line ends (line-endings.ts): whole when it arrives within
 * RECENT_PAYLOAD_MAX bytes (read first, then converted in one call: a stream pipeline per message cost
 * three times the CPU of the conversion), else a stream. `traits` reads the stored bytes on the way: complete
 * once the store has read them all.
 */
async function withCrlfLineEnds(payload: Readable | Buffer, traits: BodyTraits): Promise<Readable | Buffer> {
  const whole = Buffer.isBuffer(payload) ? payload : await readUpTo(payload, RECENT_PAYLOAD_MAX);
  if (Buffer.isBuffer(whole)) {
    const converted = crlfLineEnds(whole);
    traits.scan(converted);
    traits.end();
    return converted;
  }
  // pipeline passes a failure of the source (the size limit, the sender gone) on to what the store reads.
  return pipeline(whole, new CrlfLineEndsStream(traits), () => {});
}
