import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { OutboundStrategyName } from './outbound/strategy-names.ts';

/** The exchange schema (PostgreSQL schema `exchange`), as Kysely sees it. */
export interface ExchangeTables {
  rules: RulesTable;
  envelopes: EnvelopesTable;
  message_status: MessageStatusTable;
  message_status_archive: MessageStatusArchiveTable;
  /** One-off work for the first start of a brand-new schema (see migration 0003). */
  pending_setup: { task: 'starter_rules' };
}

type CreatedAt = ColumnType<Date, Date | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | undefined, Date>;

export type Channel = 'smtp' | 'json';
export const CHANNELS: Channel[] = ['smtp', 'json'];

/**
 * The envelope's life, in order (docs/specification.md#envelope-statuses). `routed` is a history entry
 * only: it is written with `accepted`, and the envelope row stays `accepted` until a worker claims it
 * (docs/design.md#delivery).
 */
export const ENVELOPE_STATUSES = [
  'accepted',
  'routed',
  'delivering',
  'delivered',
  'retrying',
  'failed',
  'bounced',
  'held',
  'deleted',
] as const;
/**
 * `held`: an operator put the envelope on hold (`sealpost queue hold`); no worker claims it until it is
 * released. `deleted`: a history entry only, an operator deleted the envelope and its payload.
 */
export type EnvelopeStatus = (typeof ENVELOPE_STATUSES)[number];

export interface RulesTable {
  id: Generated<string>;
  name: string;
  priority: number;
  channel: Channel;
  /** Normalised sender address; null matches every sender. */
  sender: string | null;
  outbound: OutboundStrategyName[];
  /** What the rule matches beyond channel and sender, and its stripSubjectTag; null for none (rules/criteria.ts). */
  criteria: ColumnType<RuleCriteria | null, RuleCriteria | null | undefined, RuleCriteria | null>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/**
 * A rule's criteria as stored: domains normalised (lower case, IDN as punycode, a leading `!` kept),
 * each present one required (docs/specification.md#delivery-configuration-rule).
 */
export interface RuleCriteria {
  recipientDomains?: string[];
  senderDomains?: string[];
  subjectContains?: string;
  header?: { name: string; value: string };
  stripSubjectTag?: boolean;
}

export interface EnvelopesTable {
  id: string;
  channel: Channel;
  /** Envelope sender (MAIL FROM); '' is the null sender <> of bounces. */
  sender: string;
  recipients: string[];
  size: number;
  payload_key: string;
  rule_id: string | null;
  /** The matched rule's outbound strategies, recorded at acceptance. */
  outbound: OutboundStrategyName[];
  /** Outbound strategies already delivered, so a retry does not repeat them. */
  done_outbound: ColumnType<OutboundStrategyName[], OutboundStrategyName[] | undefined, OutboundStrategyName[]>;
  status: EnvelopeStatus;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | undefined, Date>;
  /** Set while a worker owns the envelope; past it, another worker may take it (crash recovery). */
  lease_until: Date | null;
  last_error: string | null;
  /** A bounce we generated: it never bounces itself. */
  is_bounce: ColumnType<boolean, boolean | undefined, boolean>;
  /** Accepted with BODY=8BITMIME, or holding 8-bit bytes whatever was declared: the relay declares it. */
  body_8bitmime: ColumnType<boolean, boolean | undefined, boolean>;
  /** Has a line over 998 octets (RFC 5322 §2.1.1), found at intake: the relay re-encodes what has one. */
  long_lines: ColumnType<boolean, boolean | undefined, boolean>;
  /** Accepted with SMTPUTF8 (or UTF-8 addresses over JSON): the relay declares it again. */
  smtputf8: ColumnType<boolean, boolean | undefined, boolean>;
  /** The subject text its rule strips (stripSubjectTag) from every copy that leaves; null strips nothing. */
  subject_strip: ColumnType<string | null, string | null | undefined, string | null>;
  /** Recipients that failed for good, with their DSN status, once known; a bounce is built from it. */
  bounce_report: ColumnType<BounceReport | null, never, BounceReport | null>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/** What went wrong for whom (RFC 3464 per-recipient fields), stored as jsonb on the envelope. */
export interface BounceReport {
  /** One line for the human-readable part of the bounce. */
  reason: string;
  recipients: Array<{
    recipient: string;
    /** RFC 3463 status code, e.g. 5.1.1 or 4.4.7. */
    status: string;
    /** RFC 3464 Diagnostic-Code value with its type, e.g. `smtp; 550 5.1.1 no such user`. */
    diagnostic?: string;
    /** RFC 3464 Remote-MTA value with its type, e.g. `dns; relay.example`. */
    remoteMta?: string;
  }>;
}

export interface MessageStatusTable {
  id: Generated<number>;
  envelope_id: string;
  status: EnvelopeStatus;
  detail: string | null;
  created_at: CreatedAt;
}

export interface MessageStatusArchiveTable {
  id: number;
  envelope_id: string;
  status: EnvelopeStatus;
  detail: string | null;
  created_at: Date;
  archived_at: ColumnType<Date, Date | undefined, never>;
}

export type Rule = Selectable<RulesTable>;
export type Envelope = Selectable<EnvelopesTable>;
export type NewEnvelope = Insertable<EnvelopesTable>;
