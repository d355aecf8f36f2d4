import { secretVersion } from '../crypto/secret-box.ts';
import { sql, type Kysely, type QueryCreator } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Clock } from '../../kernel/clock.ts';
import { compileOnce } from '../../kernel/db/compile-once.ts';
import { everyColumn } from '../../kernel/db/prepared.ts';
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
  /** The end date; null: it does not end by itself. */
  expiresAt: Date | null;
}

export interface PinOutcome {
  cluster: string;
  status: PinStatus;
  error?: string;
  /** For a pin not yet held: when the follower looks again (asks, or pins again after an error). */
  nextAttemptAt?: Date;
}

export interface ClaimedPin {
  sealedId: string;
  cluster: string;
  cid: string;
  status: PinStatus;
  attempts: number;
}

/** A seal not pinned on every cluster, as the admin list shows it. */
export interface OpenSeal {
  message: Pick<SealedMessage, 'id' | 'cid' | 'sealed_at'>;
  pins: SealedPin[];
}

/** Column types of the child rows (migrations 0001, 0002), for the casts of SealedStore.insert. */
const RECIPIENT_TYPES = {
  position: 'integer',
  email: 'text',
  email_key: 'text',
  method: 'text',
  mobile: 'text',
  language: 'text',
  mobile_source: 'text',
  withdrawn_at: 'timestamptz',
  withdraw_note: 'text',
};
const PIN_TYPES = {
  cluster: 'text',
  position: 'integer',
  status: 'text',
  error: 'text',
  attempts: 'integer',
  next_attempt_at: 'timestamptz',
  overdue_at: 'timestamptz',
  updated_at: 'timestamptz',
};

/** Stands for the id in the record's statement while it is compiled; never sent. */
const RECORD_PLACEHOLDER = 'compile-once:sealed-record';

/**
 * The message columns of the record's statement, named: it is a prepared statement (everyColumn). The
 * recipients and pins come as JSON, whose type does not change when a migration adds a column to them.
 */
const MESSAGE_COLUMNS = everyColumn<SealedMessage>()([
  'id',
  'envelope_id',
  'cid',
  'wrapped',
  'file_name',
  'sha256',
  'size',
  'wrapped_key',
  'key_version',
  'sender',
  'subject',
  'sealed_at',
  'expires_at',
  'ended_at',
  'end_reason',
  'end_note',
]);

/** Sealed-message records in PostgreSQL: the message row, its recipients, one pin row per cluster. */
export class SealedStore {
  constructor(
    private readonly db: Kysely<SealTables>,
    private readonly clock: Clock,
  ) {}

  async findByEnvelope(envelopeId: string): Promise<SealedRecord | undefined> {
    return this.record('envelope_id', envelopeId);
  }

  async get(id: string): Promise<SealedRecord> {
    const record = await this.record('id', id);
    if (!record) throw notFound(`No sealed message ${id}`);
    return record;
  }

  /** One recipient of a message, with what the message's end depends on (its end, end date and sender). */
  async recipient(
    id: string,
    emailKey: string,
  ): Promise<
    | {
        recipient: SealedRecipient;
        message: Pick<SealedMessage, 'id' | 'sender' | 'expires_at' | 'ended_at' | 'end_reason' | 'end_note'>;
      }
    | undefined
  > {
    const row = await this.db
      .selectFrom('sealed_recipients as r')
      .innerJoin('sealed_messages as m', 'm.id', 'r.sealed_id')
      .selectAll('r')
      .select(['m.sender', 'm.expires_at', 'm.ended_at', 'm.end_reason', 'm.end_note'])
      .where('r.sealed_id', '=', id)
      .where('r.email_key', '=', emailKey)
      .executeTakeFirst();
    if (!row) return undefined;
    const { sender, expires_at, ended_at, end_reason, end_note, ...recipient } = row;
    return { recipient, message: { id, sender, expires_at, ended_at, end_reason, end_note } };
  }

  /**
   * The sealed messages addressed to one recipient (lower-cased address), newest first, each with that
   * recipient's row (the sign-in method and mobile number are per message). A page goes on from the last entry
   * of the one before: `before` its sealedAt, `beforeId` its id. Ordered and compared on the time to the
   * millisecond, as the answer writes it (sealed_at holds microseconds), then on the id: two messages sealed
   * in the same millisecond are both listed, whichever page boundary falls between them.
   */
  async byRecipient(
    emailKey: string,
    limit: number,
    before?: Date,
    beforeId?: string,
  ): Promise<Array<{ message: SealedMessage; recipient: SealedRecipient }>> {
    const sealedMs = sql<Date>`date_trunc('milliseconds', m.sealed_at)`;
    let query = this.db
      .selectFrom('sealed_recipients as r')
      .innerJoin('sealed_messages as m', 'm.id', 'r.sealed_id')
      .selectAll('m')
      .select([
        'r.position',
        'r.email',
        'r.email_key',
        'r.method',
        'r.mobile',
        'r.language',
        'r.mobile_source',
        'r.withdrawn_at',
        'r.withdraw_note',
      ])
      .where('r.email_key', '=', emailKey)
      .orderBy(sealedMs, 'desc')
      .orderBy('m.id')
      .limit(limit);
    if (before && beforeId)
      query = query.where((eb) =>
        eb.or([eb(sealedMs, '<', before), eb.and([eb(sealedMs, '=', before), eb('m.id', '>', beforeId)])]),
      );
    else if (before) query = query.where(sealedMs, '<', before);
    const rows = await query.execute();
    return rows.map(
      ({
        position,
        email,
        email_key,
        method,
        mobile,
        language,
        mobile_source,
        withdrawn_at,
        withdraw_note,
        ...message
      }) => ({
        message,
        recipient: {
          sealed_id: message.id,
          ...{ position, email, email_key, method, mobile, language, mobile_source, withdrawn_at, withdraw_note },
        },
      }),
    );
  }

  /**
   * Stores a sealed message with its recipients, pins and the trail's `sealed` entry in one statement (atomic
   * like a transaction, one round trip instead of eight: this sits on every seal's path to its answer). The child rows
   * select from the inserted message, so when another request stored one for the same envelope first,
   * nothing is written and that record is returned (`created: false`): the same envelope always gives
   * the same sealed record.
   */
  async insert(
    message: NewSealedMessage,
    recipients: Recipient[],
    pins: PinOutcome[],
  ): Promise<{ created: boolean; record: SealedRecord }> {
    const now = new Date(this.clock.now());
    const recipientRows: SealedRecipient[] = recipients.map((recipient, position) => ({
      sealed_id: message.id,
      position,
      email: recipient.email,
      email_key: recipient.email.toLowerCase(),
      method: recipient.method,
      mobile: recipient.mobile ?? null,
      language: recipient.language ?? null,
      mobile_source: recipient.mobile ? (recipient.mobileSource ?? 'header') : null,
      withdrawn_at: null,
      withdraw_note: null,
    }));
    const pinRows: SealedPin[] = pins.map((pin, position) => ({
      sealed_id: message.id,
      cluster: pin.cluster,
      position,
      status: pin.status,
      error: pin.error ?? null,
      attempts: 1,
      next_attempt_at: pin.status === 'pinned' ? null : (pin.nextAttemptAt ?? now),
      overdue_at: null,
      updated_at: now,
    }));
    /**
     * `select message.id, <values> from message` per row, united: child rows that exist only if the
     * message row was inserted. Each value is cast to its column's type, which PostgreSQL cannot infer
     * for a parameter in a select list.
     */
    const fromMessage = (creator: unknown, rows: object[], types: Record<string, string>) => {
      // The creator inside .with() knows the `message` CTE; its full type (with the other CTEs) is not needed here.
      const db = creator as QueryCreator<{ message: SealedMessage }>;
      const selectRow = (row: object) =>
        db.selectFrom('message').select((eb) => [
          eb.ref('message.id').as('sealed_id'),
          ...Object.entries(row)
            .filter(([column]) => column !== 'sealed_id')
            .map(([column, value]) => sql`cast(${value} as ${sql.raw(types[column]!)})`.as(column)),
        ]);
      let union = selectRow(rows[0]!);
      for (const row of rows.slice(1)) union = union.unionAll(selectRow(row));
      return union;
    };
    if (recipientRows.length === 0 || pinRows.length === 0) throw new Error('a sealed message has recipients and pins');
    const inserted = await this.db
      .with('message', (db) =>
        db
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
            key_version: secretVersion(message.wrappedKey) ?? 1,
            sender: message.sender,
            subject: message.subject,
            expires_at: message.expiresAt,
          })
          .onConflict((oc) => oc.column('envelope_id').doNothing())
          .returningAll(),
      )
      .with('recipients', (db) =>
        db
          .insertInto('sealed_recipients')
          .columns(Object.keys(recipientRows[0]!) as Array<keyof SealedRecipient>)
          .expression(fromMessage(db, recipientRows, RECIPIENT_TYPES))
          .returning('sealed_id'),
      )
      .with('pins', (db) =>
        db
          .insertInto('sealed_pins')
          .columns(Object.keys(pinRows[0]!) as Array<keyof SealedPin>)
          .expression(fromMessage(db, pinRows, PIN_TYPES))
          .returning('sealed_id'),
      )
      // The trail's first entry, written with the seal or not at all (docs/specification.md#trail).
      .with('trail', (db) =>
        db
          .insertInto('sealed_trail')
          .columns(['sealed_id', 'at', 'event'])
          .expression(
            db.selectFrom('message').select(['message.id', 'message.sealed_at', sql<'sealed'>`'sealed'`.as('event')]),
          )
          .returning('sealed_id'),
      )
      .selectFrom('message')
      .selectAll()
      .executeTakeFirst();
    if (inserted) return { created: true, record: { message: inserted, recipients: recipientRows, pins: pinRows } };
    const record = await this.findByEnvelope(message.envelopeId);
    if (!record) throw new Error(`sealed record of envelope ${message.envelopeId} vanished`);
    return { created: false, record };
  }

  /**
   * Takes up to `limit` pins not yet held (`pinning` to ask about, `pin_error` to pin again) that are due
   * on the given clusters and pushes their next look to `leaseUntil`, so that other instances skip them
   * while this one works (and take them again if it dies). One statement, so that a pass with nothing
   * due costs one round trip; SKIP LOCKED: instances never wait for each other.
   */
  async claimDuePins(clusters: string[], limit: number, leaseUntil: Date): Promise<ClaimedPin[]> {
    if (clusters.length === 0) return [];
    const now = new Date(this.clock.now());
    const rows = await this.db
      .with('due', (db) =>
        db
          .selectFrom('sealed_pins')
          .select(['sealed_id', 'cluster'])
          .where('status', '<>', 'pinned')
          .where('cluster', 'in', clusters)
          .where('next_attempt_at', '<=', now)
          // An ended message is never pinned again: its content is being unpinned (seal_end_work). Its open
          // pins are taken off the schedule when it ends; one past its end date waits for the pass.
          .where('sealed_id', 'in', (eb) =>
            eb
              .selectFrom('sealed_messages')
              .select('id')
              .where('ended_at', 'is', null)
              .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])),
          )
          .orderBy('next_attempt_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .updateTable('sealed_pins as pin')
      .set({ next_attempt_at: leaseUntil })
      .from(['due', 'sealed_messages as message'])
      .whereRef('pin.sealed_id', '=', 'due.sealed_id')
      .whereRef('pin.cluster', '=', 'due.cluster')
      .whereRef('message.id', '=', 'pin.sealed_id')
      .returning(['pin.sealed_id', 'pin.cluster', 'pin.status', 'pin.attempts', 'message.cid'])
      .execute();
    return rows.map((pin) => ({
      sealedId: pin.sealed_id,
      cluster: pin.cluster,
      cid: pin.cid,
      status: pin.status,
      attempts: pin.attempts,
    }));
  }

  /**
   * Records where a claimed pin stands. `pinned` clears the error and the next look; `pinning` and
   * `pin_error` set when to look again. `attempted`: the follower pinned again (counts as an attempt).
   */
  async recordPinState(
    pin: ClaimedPin,
    outcome: { status: PinStatus; error?: string; nextAttemptAt?: Date; attempted: boolean },
  ): Promise<void> {
    const pinned = outcome.status === 'pinned';
    const now = new Date(this.clock.now());
    const next = pinned ? null : (outcome.nextAttemptAt ?? now);
    const row = await this.db
      .updateTable('sealed_pins')
      .from('sealed_messages as message')
      .set({
        status: outcome.status,
        error: outcome.status === 'pin_error' ? (outcome.error ?? null) : null,
        attempts: pin.attempts + (outcome.attempted ? 1 : 0),
        // An ended message's pins are no longer followed.
        next_attempt_at: sql<Date | null>`case when message.ended_at is null then ${next}::timestamptz end`,
        ...(pinned ? { overdue_at: null } : {}),
        updated_at: now,
      })
      .whereRef('message.id', '=', 'sealed_pins.sealed_id')
      .where('sealed_pins.sealed_id', '=', pin.sealedId)
      .where('sealed_pins.cluster', '=', pin.cluster)
      .returning('message.ended_at')
      .executeTakeFirst();
    // The message ended while this pin was being pinned again, and the unpin may have gone out before the pin:
    // the cluster is asked to unpin once more.
    if (row?.ended_at && outcome.attempted) {
      await this.db
        .insertInto('seal_end_work')
        .values({ sealed_id: pin.sealedId, cluster: pin.cluster, cid: pin.cid, next_attempt_at: now })
        .onConflict((oc) => oc.columns(['sealed_id', 'cluster']).doUpdateSet({ next_attempt_at: now }))
        .execute();
    }
  }

  /**
   * Marks the pins of seals older than `sealedBefore` that are still not held and were not reported
   * yet, and returns them: each is reported once as overdue.
   */
  async markOverdue(
    sealedBefore: Date,
  ): Promise<Array<{ sealedId: string; cluster: string; status: PinStatus; error: string | null }>> {
    const rows = await this.db
      .updateTable('sealed_pins')
      .set({ overdue_at: new Date(this.clock.now()) })
      .where('status', '<>', 'pinned')
      .where('overdue_at', 'is', null)
      .where('sealed_id', 'in', (eb) =>
        eb
          .selectFrom('sealed_messages')
          .select('id')
          .where('sealed_at', '<', sealedBefore)
          .where('ended_at', 'is', null),
      )
      .returning(['sealed_id', 'cluster', 'status', 'error'])
      .execute();
    return rows.map((row) => ({ sealedId: row.sealed_id, cluster: row.cluster, status: row.status, error: row.error }));
  }

  /** Pins not held, by cluster and state, and how many of them are past the deadline (for the gauges). */
  async openPinCounts(): Promise<Array<{ cluster: string; status: PinStatus; count: number; overdue: number }>> {
    const rows = await this.db
      .selectFrom('sealed_pins')
      .select((eb) => [
        'cluster',
        'status',
        eb.fn.countAll<string>().as('count'),
        eb.fn.count<string>('overdue_at').as('overdue'),
      ])
      .where('status', '<>', 'pinned')
      .where('sealed_id', 'in', (eb) => eb.selectFrom('sealed_messages').select('id').where('ended_at', 'is', null))
      .groupBy(['cluster', 'status'])
      .execute();
    return rows.map((row) => ({
      cluster: row.cluster,
      status: row.status,
      count: Number(row.count),
      overdue: Number(row.overdue),
    }));
  }

  /** Seals with at least one pin not held, oldest first, with all their pins. */
  async openSeals(limit: number): Promise<OpenSeal[]> {
    const messages = await this.db
      .selectFrom('sealed_messages')
      .select(['id', 'cid', 'sealed_at'])
      .where('id', 'in', (eb) => eb.selectFrom('sealed_pins').select('sealed_id').where('status', '<>', 'pinned'))
      .where('ended_at', 'is', null)
      .orderBy('sealed_at')
      .limit(limit)
      .execute();
    if (messages.length === 0) return [];
    const pins = await this.db
      .selectFrom('sealed_pins')
      .selectAll()
      .where(
        'sealed_id',
        'in',
        messages.map((message) => message.id),
      )
      .orderBy('sealed_id')
      .orderBy('position')
      .execute();
    return messages.map((message) => ({ message, pins: pins.filter((pin) => pin.sealed_id === message.id) }));
  }

  /**
   * A record in one statement, its recipients and pins as JSON arrays beside the message row: one round
   * trip instead of two (three queries) on every read of a record (GET /v1/sealed/{id}/content, which the
   * auth service asks on every read of a message). Built and compiled once per column (compileOnce):
   * building it cost more of the seal service's CPU per read than the rest of its PostgreSQL work; and
   * prepared once per connection, as planning it took PostgreSQL longer than running it (bench/RESULTS.md,
   * "The seal's record statement prepared"). JSON brings the pins' times as text: turned back into Dates.
   */
  private readonly recordStatements = {
    id: compileOnce((value: string) => this.recordQuery('id', value), RECORD_PLACEHOLDER, { prepare: true }),
    envelope_id: compileOnce((value: string) => this.recordQuery('envelope_id', value), RECORD_PLACEHOLDER, {
      prepare: true,
    }),
  };

  private recordQuery(column: 'id' | 'envelope_id', value: string) {
    return this.db
      .selectFrom('sealed_messages as m')
      .select(MESSAGE_COLUMNS.map((column) => `m.${column}` as const))
      .select((eb) => [
        jsonArrayFrom(
          eb
            .selectFrom('sealed_recipients as r')
            .selectAll('r')
            .whereRef('r.sealed_id', '=', 'm.id')
            .orderBy('r.position'),
        ).as('recipients'),
        jsonArrayFrom(
          eb.selectFrom('sealed_pins as p').selectAll('p').whereRef('p.sealed_id', '=', 'm.id').orderBy('p.position'),
        ).as('pins'),
      ])
      .where(`m.${column}`, '=', value);
  }

  private async record(column: 'id' | 'envelope_id', value: string): Promise<SealedRecord | undefined> {
    const row = (await this.db.executeQuery(this.recordStatements[column](value))).rows[0];
    if (!row) return undefined;
    const { recipients, pins, ...message } = row;
    return {
      message,
      recipients: recipients.map((recipient) => ({
        ...recipient,
        withdrawn_at: recipient.withdrawn_at === null ? null : new Date(recipient.withdrawn_at),
      })),
      pins: pins.map((pin) => ({
        ...pin,
        next_attempt_at: pin.next_attempt_at === null ? null : new Date(pin.next_attempt_at),
        overdue_at: pin.overdue_at === null ? null : new Date(pin.overdue_at),
        updated_at: new Date(pin.updated_at),
      })),
    };
  }
}
