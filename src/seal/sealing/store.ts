import type { Kysely } from 'kysely';
import { notFound } from '../../kernel/errors.ts';
import type { PinStatus, SealedMessage, SealedPin, SealedRecipient, SealTables } from '../tables.ts';
import type { Recipient } from './recipients.ts';

export interface SealedRecord {
  message: SealedMessage;
  recipients: SealedRecipient[];
  pins: SealedPin[];
}

export interface NewSealedMessage {
  id: string;
  envelopeId: string;
  cid: string;
  wrapped: boolean;
  fileName: string;
  sha256: string;
  size: number;
  wrappedKey: string;
  sender: string;
  subject: string;
}

export interface PinOutcome {
  cluster: string;
  status: PinStatus;
  error?: string;
  /** For a failed pin: when to try again. */
  nextAttemptAt?: Date;
}

export interface ClaimedPin {
  sealedId: string;
  cluster: string;
  cid: string;
  attempts: number;
}

/** Sealed-message records in PostgreSQL: the message row, its recipients, one pin row per cluster. */
export class SealedStore {
  constructor(private readonly db: Kysely<SealTables>) {}

  async findByEnvelope(envelopeId: string): Promise<SealedRecord | undefined> {
    const message = await this.db.selectFrom('sealed_messages').selectAll().where('envelope_id', '=', envelopeId).executeTakeFirst();
    return message ? this.complete(message) : undefined;
  }

  async get(id: string): Promise<SealedRecord> {
    const message = await this.db.selectFrom('sealed_messages').selectAll().where('id', '=', id).executeTakeFirst();
    if (!message) throw notFound(`No sealed message ${id}`);
    return this.complete(message);
  }

  async recipient(id: string, emailKey: string): Promise<SealedRecipient | undefined> {
    return this.db
      .selectFrom('sealed_recipients')
      .selectAll()
      .where('sealed_id', '=', id)
      .where('email_key', '=', emailKey)
      .executeTakeFirst();
  }

  /**
   * Stores a sealed message with its recipients and pins in one transaction. When another request
   * stored one for the same envelope first, nothing is written and that record is returned
   * (`created: false`): the same envelope always gives the same sealed record.
   */
  async insert(message: NewSealedMessage, recipients: Recipient[], pins: PinOutcome[]): Promise<{ created: boolean; record: SealedRecord }> {
    const inserted = await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .insertInto('sealed_messages')
        .values({
          id: message.id,
          envelope_id: message.envelopeId,
          cid: message.cid,
          wrapped: message.wrapped,
          file_name: message.fileName,
          sha256: message.sha256,
          size: message.size,
          wrapped_key: message.wrappedKey,
          sender: message.sender,
          subject: message.subject,
        })
        .onConflict((oc) => oc.column('envelope_id').doNothing())
        .returning('id')
        .executeTakeFirst();
      if (!row) return false;
      await trx
        .insertInto('sealed_recipients')
        .values(
          recipients.map((recipient, position) => ({
            sealed_id: message.id,
            position,
            email: recipient.email,
            email_key: recipient.email.toLowerCase(),
            method: recipient.method,
            mobile: recipient.mobile ?? null,
          })),
        )
        .execute();
      if (pins.length > 0) {
        await trx
          .insertInto('sealed_pins')
          .values(
            pins.map((pin, position) => ({
              sealed_id: message.id,
              cluster: pin.cluster,
              position,
              status: pin.status,
              error: pin.error ?? null,
              attempts: 1,
              next_attempt_at: pin.status === 'failed' ? (pin.nextAttemptAt ?? new Date()) : null,
            })),
          )
          .execute();
      }
      return true;
    });
    const record = inserted ? await this.get(message.id) : await this.findByEnvelope(message.envelopeId);
    if (!record) throw new Error(`sealed record of envelope ${message.envelopeId} vanished`);
    return { created: inserted, record };
  }

  /**
   * Takes up to `limit` failed pins that are due on the given clusters and pushes their next attempt
   * to `leaseUntil`, so that other instances skip them while this one tries (and take them again if
   * it dies). SKIP LOCKED: instances never wait for each other.
   */
  async claimDuePins(clusters: string[], limit: number, leaseUntil: Date): Promise<ClaimedPin[]> {
    if (clusters.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      const due = await trx
        .selectFrom('sealed_pins')
        .select(['sealed_id', 'cluster', 'attempts'])
        .where('status', '=', 'failed')
        .where('cluster', 'in', clusters)
        .where('next_attempt_at', '<=', new Date())
        .orderBy('next_attempt_at')
        .limit(limit)
        .forUpdate()
        .skipLocked()
        .execute();
      if (due.length === 0) return [];
      const ids = [...new Set(due.map((pin) => pin.sealed_id))];
      await trx
        .updateTable('sealed_pins')
        .set({ next_attempt_at: leaseUntil })
        .where('status', '=', 'failed')
        .where((eb) => eb.or(due.map((pin) => eb.and([eb('sealed_id', '=', pin.sealed_id), eb('cluster', '=', pin.cluster)]))))
        .execute();
      const cids = new Map(
        (await trx.selectFrom('sealed_messages').select(['id', 'cid']).where('id', 'in', ids).execute()).map((row) => [row.id, row.cid]),
      );
      return due.map((pin) => ({ sealedId: pin.sealed_id, cluster: pin.cluster, cid: cids.get(pin.sealed_id)!, attempts: pin.attempts }));
    });
  }

  async recordPinAttempt(pin: ClaimedPin, outcome: { ok: true } | { ok: false; error: string; nextAttemptAt: Date }): Promise<void> {
    await this.db
      .updateTable('sealed_pins')
      .set({
        status: outcome.ok ? 'pinned' : 'failed',
        error: outcome.ok ? null : outcome.error,
        attempts: pin.attempts + 1,
        next_attempt_at: outcome.ok ? null : outcome.nextAttemptAt,
        updated_at: new Date(),
      })
      .where('sealed_id', '=', pin.sealedId)
      .where('cluster', '=', pin.cluster)
      .execute();
  }

  private async complete(message: SealedMessage): Promise<SealedRecord> {
    const [recipients, pins] = await Promise.all([
      this.db.selectFrom('sealed_recipients').selectAll().where('sealed_id', '=', message.id).orderBy('position').execute(),
      this.db.selectFrom('sealed_pins').selectAll().where('sealed_id', '=', message.id).orderBy('position').execute(),
    ]);
    return { message, recipients, pins };
  }
}
