import { randomUUID } from 'node:crypto';
import { pipeline, type Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { AppError } from '../../kernel/errors.ts';
import { readUpTo } from '../../kernel/read-up-to.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import { EXCHANGE_VARIABLES } from '../config.ts';
import { senderKey } from '../rules/match.ts';
import type { RuleStore } from '../rules/store.ts';
import type { Channel, ExchangeTables } from '../tables.ts';
import type { OutboundStrategyName } from '../outbound/strategy-names.ts';
import {
  createEnvelopeAcknowledger,
  createEnvelopeWriter,
  deleteNeverAcknowledged,
  type AcknowledgedEnvelope,
  type NewEnvelope,
  type WrittenEnvelope,
} from './envelope-writer.ts';
import { crlfLineEnds, CrlfLineEndsStream } from './line-endings.ts';
import { RECENT_PAYLOAD_MAX, type RecentPayloads } from './recent-payloads.ts';
import type { Claim } from '../delivery/queue.ts';
import type { SlotReservation } from '../delivery/worker.ts';

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

/** How long after a message came in the intake counts as busy: a few messages' time at 1 connection. */
const INTAKE_BUSY_WINDOW_MS = 100;

export const payloadKey = (envelopeId: string) => `exchange/payloads/${envelopeId}`;

/**
 * A message made durable: its payload's size, its bytes when it was read whole, its strategies, and its
 * claim with the slot it is delivered in when its row was born claimed.
 */
interface Durable {
  size: number;
  bytes?: Buffer;
  outbound: OutboundStrategyName[];
  born?: { claim: Claim; slot: SlotReservation };
  /** A row written beside its payload and not born claimed: only this instance may claim it before its grace. */
  beside?: boolean;
}

/**
 * The one door every message enters by (SMTP and JSON alike), in the order docs/design.md#intake demands.
 * Three ways to make a message durable (docs/design.md#durability-of-intake), all of which acknowledge
 * nothing that is not durable and deliver or bounce nothing whose put never ended:
 * - **overlapped**, while at most `overlapLimit` messages are being taken in (INTAKE_OVERLAP_LIMIT; none by
 *   default): the row is written in status `storing`, which nothing claims or bounces, while the payload is
 *   stored; once both are durable one batched UPDATE makes it `accepted` with its first status rows;
 * - **beside the put**, when more are and the message was read whole (INTAKE_BESIDE_PUT_GRACE, 5 s by
 *   default): one batched statement writes the row `accepted` (or born claimed) and `payload_pending` while
 *   the payload is stored; no other instance may claim it until the grace is over, and this instance's
 *   delivery claims it once both are durable (acceptBeside). A message then waits for the slower of its two
 *   writes, not for both one after the other;
 * - **stored first**, otherwise: the payload is stored, then one batched statement writes the row
 *   `accepted` with its status rows. This saves the acknowledgement's statement and commit against the
 *   overlapped way (bench/RESULTS.md, "One commit per message while the intake is busy").
 * Beside the put and stored first, the row is born claimed (`delivering`) when this instance's delivery has
 * a slot free for it (claimAtIntake). Only then does accept() resolve, so the caller acknowledges nothing
 * that is not durable. The delivery rule is matched in the statement that writes the row (see
 * createEnvelopeWriter); with no matching rule nothing is written, the payload is deleted again, and
 * accept() fails with RuleStore.match's 503. A message that fails before its acknowledgement loses its
 * payload and its row again; what a crash leaves behind is removed by AbandonedIntakeSweep (`storing` rows),
 * OrphanPayloadSweep (payloads) and the claim of a row whose payload never came (deliver.ts). Failures of
 * either store are 503 AppErrors (the SMTP handler turns them into 451).
 */
export class MessageIntake {
  private readonly writeEnvelope: (envelope: NewEnvelope) => Promise<WrittenEnvelope>;
  private readonly writeStoredEnvelope: (envelope: NewEnvelope) => Promise<WrittenEnvelope>;
  private readonly acknowledge: (envelope: AcknowledgedEnvelope) => Promise<boolean>;
  /** INTAKE_BESIDE_PUT_GRACE above 0: the writer of rows beside their put, and the grace others wait. */
  private readonly beside?: { write: (envelope: NewEnvelope) => Promise<WrittenEnvelope>; graceMs: number };
  private readonly acceptedListeners: Array<(besideRow?: string) => void> = [];
  private reserveSlot: () => SlotReservation | undefined = () => undefined;
  private readonly overlapLimit: number;
  private lastIntakeAt = Number.NEGATIVE_INFINITY;
  /** Messages between the start of accept() and its end. */
  private inFlight = 0;

  constructor(
    private readonly deps: {
      db: Kysely<ExchangeTables>;
      objects: ObjectStore;
      rules: RuleStore;
      logger: Logger;
      /** Keeps small accepted payloads for this instance's delivery. */
      recentPayloads?: RecentPayloads;
      /** INTAKE_OVERLAP_LIMIT: the most messages in flight at which a message's two writes overlap (its default). */
      overlapLimit?: number;
      /**
       * Write a message's row beside its payload's put (the way `beside`): others may claim the row `graceMs`
       * after it was written, and an intake slower than that answers 451. Stored first when absent.
       */
      beside?: { graceMs: number };
    },
  ) {
    this.writeEnvelope = createEnvelopeWriter(deps.db);
    this.writeStoredEnvelope = createEnvelopeWriter(deps.db, { stored: true });
    if (deps.beside)
      this.beside = { write: createEnvelopeWriter(deps.db, { beside: deps.beside }), graceMs: deps.beside.graceMs };
    this.acknowledge = createEnvelopeAcknowledger(deps.db);
    this.overlapLimit = deps.overlapLimit ?? Number(EXCHANGE_VARIABLES.intakeOverlapLimit.default);
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
    const envelope: NewEnvelope = {
      id: envelopeId,
      channel: message.channel,
      sender: message.sender,
      senderKey: senderKey(message.sender),
      recipients: message.recipients,
      payloadKey: payloadKey(envelopeId),
      isBounce: message.isBounce ?? false,
      body8bitmime: message.body8bitmime ?? false,
      smtputf8: message.smtputf8 ?? false,
    };
    this.inFlight++;
    try {
      const { size, bytes, outbound, born, beside } =
        this.inFlight <= this.overlapLimit
          ? await this.acceptOverlapped(message, envelope)
          : await this.acceptNotOverlapped(message, envelope);
      if (bytes) this.deps.recentPayloads?.remember(envelopeId, bytes);
      if (born) born.slot.start(born.claim);
      else for (const listener of this.acceptedListeners) listener(beside ? envelopeId : undefined);
      return { envelopeId, size, outbound };
    } finally {
      this.inFlight--;
    }
  }

  /** Beside the put when that way is on and the message was read whole; else stored first. */
  private async acceptNotOverlapped(message: IncomingMessage, envelope: NewEnvelope): Promise<Durable> {
    const body = await crlfBody(message.payload);
    return Buffer.isBuffer(body) && this.beside
      ? this.acceptBeside(message, envelope, body, this.beside)
      : this.acceptStoredFirst(message, envelope, body);
  }

  /** The payload's put and the `storing` row's insert at the same time, then the acknowledgement. */
  private async acceptOverlapped(message: IncomingMessage, envelope: NewEnvelope): Promise<Durable> {
    const { id: envelopeId, payloadKey: key } = envelope;
    const [stored, row] = await Promise.allSettled([
      crlfBody(message.payload).then((body) => this.storePayload(key, body)),
      this.writeEnvelope(envelope),
    ]);
    if (stored.status === 'rejected') {
      if (row.status === 'fulfilled' && row.value) await this.forgetRow(envelopeId);
      throw stored.reason;
    }
    const { size, bytes } = stored.value;
    if (row.status === 'rejected') return this.writeFailed(row.reason, envelope);
    const written = row.value ?? (await this.writeAfterNoRule(message, envelope, this.writeEnvelope));

    let acknowledged: boolean;
    try {
      acknowledged = await this.acknowledge({
        id: envelopeId,
        size,
        acceptedDetail: acceptedDetail(message, size),
        routedDetail: written.routedDetail,
      });
    } catch (error) {
      // The payload goes only if the row certainly stayed `storing`. Otherwise (the connection lost,
      // perhaps after the commit) deleting it could leave an accepted envelope without payload, which
      // would bounce a message whose sender got 451 and sent again; if the row stayed `storing`,
      // AbandonedIntakeSweep removes both later.
      if (statementRolledBack(error))
        await Promise.all([this.deletePayload(key, envelopeId), this.forgetRow(envelopeId)]);
      else
        this.deps.logger.warn(
          { err: error, envelopeId, key, step: 'acknowledge' },
          'envelope write failed with its outcome unknown; the payload stays for the sweeps',
        );
      databaseUnavailable(error);
    }
    if (!acknowledged) {
      // The row was removed as abandoned (an intake slower than the sweep's grace): nothing was promised.
      await this.deletePayload(key, envelopeId);
      throw new AppError('unavailable', 503, 'The message took too long to store; try again later');
    }
    return { size, bytes, outbound: written.outbound };
  }

  /**
   * The payload first; once it is durable, the row `accepted` with its status rows, in one statement. When
   * this instance's delivery has a slot free, the row is born claimed instead (claimAtIntake).
   */
  private async acceptStoredFirst(
    message: IncomingMessage,
    envelope: NewEnvelope,
    body: Readable | Buffer,
  ): Promise<Durable> {
    const { size, bytes } = await this.storePayload(envelope.payloadKey, body);
    // Reserved only now: the slot is not held while the payload is being stored.
    const slot = this.reserveSlot();
    const stored: NewEnvelope = {
      ...envelope,
      stored: { size, acceptedDetail: acceptedDetail(message, size) },
      bornLeaseUntil: slot?.leaseUntil,
    };
    let written: NonNullable<WrittenEnvelope>;
    try {
      written =
        (await this.writeStoredEnvelope(stored).catch((error: unknown) => this.writeFailed(error, envelope))) ??
        (await this.writeAfterNoRule(message, stored, this.writeStoredEnvelope));
    } catch (error) {
      slot?.cancel();
      throw error;
    }
    if (slot && !written.claim) slot.cancel();
    const born = slot && written.claim ? { claim: written.claim, slot } : undefined;
    return { size, bytes, outbound: written.outbound, born };
  }

  /**
   * The payload's put and, beside it, the row's statement, written `accepted` (or born claimed when a slot is
   * free) and `payload_pending`: due only `graceMs` after it was written, so that no other instance claims it
   * while the put may still be under way. Once both are durable within the grace, the sender may be told
   * 250/202, and the row is claimed by this instance's delivery (onAccepted, with its id) or delivered in its
   * slot: no second statement. When the put fails or takes longer than the grace, the row goes again (a claim
   * after the grace that finds no payload drops it too, never bouncing it) and the sender gets 451/503.
   */
  private async acceptBeside(
    message: IncomingMessage,
    envelope: NewEnvelope,
    body: Buffer,
    { write, graceMs }: NonNullable<MessageIntake['beside']>,
  ): Promise<Durable> {
    const { id: envelopeId, payloadKey: key } = envelope;
    const size = body.length;
    // Before the slot's lease is taken and before the row's now(): both then end no sooner than the grace.
    const started = performance.now();
    const slot = this.reserveSlot();
    const row: NewEnvelope = {
      ...envelope,
      stored: { size, acceptedDetail: acceptedDetail(message, size) },
      bornLeaseUntil: slot?.leaseUntil,
    };
    const [stored, written] = await Promise.allSettled([this.storePayload(key, body), write(row)]);
    const claim = written.status === 'fulfilled' ? written.value?.claim : undefined;
    const inTime = performance.now() - started < graceMs;
    if (slot && !(claim && stored.status === 'fulfilled' && inTime)) slot.cancel();
    if (stored.status === 'rejected') {
      if (written.status === 'fulfilled' && written.value) await this.forgetPendingRow(envelopeId);
      throw stored.reason;
    }
    if (written.status === 'rejected') return this.writeFailed(written.reason, envelope);
    if (!inTime) {
      // Another instance may have claimed the row, found no payload yet and dropped it: nothing is promised.
      await Promise.all([this.deletePayload(key, envelopeId), this.forgetPendingRow(envelopeId)]);
      throw new AppError('unavailable', 503, 'The message took too long to store; try again later');
    }
    if (!written.value) {
      // No rule matched; the payload is durable now, so a second try writes the row as stored first does.
      const again = await this.writeAfterNoRule(
        message,
        { ...row, bornLeaseUntil: undefined },
        this.writeStoredEnvelope,
      );
      return { size, bytes: body, outbound: again.outbound };
    }
    const { outbound } = written.value;
    if (slot && claim) return { size, bytes: body, outbound, born: { claim, slot } };
    return { size, bytes: body, outbound, beside: true };
  }

  /**
   * A row's statement failed, its payload stored. Whether or not it was committed, a `storing` row is never
   * claimed and is removed with its payload by AbandonedIntakeSweep. An `accepted` one is delivered. So the
   * payload goes only when the statement certainly rolled back; when the outcome is unknown (the
   * connection lost) it stays for that sweep, or for OrphanPayloadSweep if no row came.
   */
  private async writeFailed(error: unknown, envelope: NewEnvelope): Promise<never> {
    const { id: envelopeId, payloadKey: key } = envelope;
    if (statementRolledBack(error)) await this.deletePayload(key, envelopeId);
    else
      this.deps.logger.warn(
        { err: error, envelopeId, key, step: 'insert' },
        'envelope write failed with its outcome unknown; the payload stays for the sweeps',
      );
    databaseUnavailable(error);
  }

  /**
   * No rule matched: RuleStore.match says why (no rule at all, or none for this channel and sender); a rule
   * created between the statement and match() gets one more try. The payload goes unless a row is written.
   */
  private async writeAfterNoRule(
    message: IncomingMessage,
    envelope: NewEnvelope,
    write: (envelope: NewEnvelope) => Promise<WrittenEnvelope>,
  ): Promise<NonNullable<WrittenEnvelope>> {
    let written: WrittenEnvelope;
    try {
      await this.route(message);
      written = await write(envelope);
    } catch (error) {
      await this.deletePayload(envelope.payloadKey, envelope.id);
      databaseUnavailable(error);
    }
    if (!written) {
      await this.deletePayload(envelope.payloadKey, envelope.id);
      throw new AppError(
        'unavailable',
        503,
        'Delivery rules changed while the message was being accepted; try again later',
      );
    }
    return written;
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

  /** Removes the `storing` row of an intake that failed; if that fails too, AbandonedIntakeSweep will. */
  private async forgetRow(envelopeId: string): Promise<void> {
    await this.deps.db
      .deleteFrom('envelopes')
      .where('id', '=', envelopeId)
      .where('status', '=', 'storing')
      .execute()
      .catch((error: unknown) => {
        this.deps.logger.warn(
          { err: error, envelopeId },
          'could not delete the row of an intake that failed; the abandoned-intake sweep will',
        );
      });
  }

  /**
   * Removes the row (and its status rows) of an intake beside its put that failed or was too slow, while it is
   * still `payload_pending`; if that fails, a claim after the grace finds no payload and drops it.
   */
  private async forgetPendingRow(envelopeId: string): Promise<void> {
    await deleteNeverAcknowledged(this.deps.db, envelopeId).catch((error: unknown) => {
      this.deps.logger.warn(
        { err: error, envelopeId },
        'could not delete the row of an intake that failed; a claim after its grace will',
      );
    });
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
   * Called after each message is durable (payload stored, envelope acknowledged) and due for a claim, before
   * accept() resolves; not for one born claimed (claimAtIntake), which is in delivery already. A row written
   * beside its put comes with its id: due for this instance's claim (EnvelopeQueue.claimDue's `mine`), and
   * for others' only after its grace.
   */
  onAccepted(listener: (besideRow?: string) => void): void {
    this.acceptedListeners.push(listener);
  }

  /**
   * This instance's delivery (DeliveryWorkers.reserve): a message stored first is written already claimed
   * while a slot is free, and delivered in it, which saves its claim, a statement that updates the row and
   * writes its `delivering` status row (docs/design.md#delivery). What a crash then leaves is what it leaves
   * of any claim: the lease runs out and another worker takes the envelope over.
   */
  claimAtIntake(reserve: () => SlotReservation | undefined): void {
    this.reserveSlot = reserve;
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
async function crlfBody(payload: Readable | Buffer): Promise<Readable | Buffer> {
  try {
    return await withCrlfLineEnds(payload);
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
 * three times the CPU of the conversion), else a stream.
 */
async function withCrlfLineEnds(payload: Readable | Buffer): Promise<Readable | Buffer> {
  const whole = Buffer.isBuffer(payload) ? payload : await readUpTo(payload, RECENT_PAYLOAD_MAX);
  if (Buffer.isBuffer(whole)) return crlfLineEnds(whole);
  // pipeline passes a failure of the source (the size limit, the sender gone) on to what the store reads.
  return pipeline(whole, new CrlfLineEndsStream(), () => {});
}
