import type { ColumnType, Generated, Selectable } from 'kysely';
import type { SignInMethodName } from './methods/names.ts';

/** The auth schema (PostgreSQL schema `auth`), as Kysely sees it. */
export interface AuthTables {
  sessions: SessionsTable;
  code_sends: CodeSendsTable;
  code_refusals: CodeRefusalsTable;
  mobile_overrides: MobileOverridesTable;
  drafts: DraftsTable;
  draft_files: DraftFilesTable;
  draft_versions: DraftVersionsTable;
  session_factors: SessionFactorsTable;
  session_grants: SessionGrantsTable;
}

export type { SignInMethodName };
/**
 * What a pending code proves when it is entered: a sign-in; for a mobile change, first the current number
 * (`mobile_current`), then the new one (`mobile_change`); a number added for later messages by a recipient who
 * signed in by email (`mobile_add`); a sender's address, for the sender's page (`sender`).
 */
export type CodePurpose = 'sign_in' | 'mobile_current' | 'mobile_change' | 'mobile_add' | 'sender';

/**
 * One server-side session. The cookie carries a random 256-bit token; only its SHA-256 is stored, so a
 * copy of this table signs nobody in. `id` is the row's stable name: rotating the token at sign-in
 * changes `token_hash` and keeps the row.
 */
export interface SessionsTable {
  id: Generated<string>;
  token_hash: string;
  created_at: ColumnType<Date, Date, never>;
  last_seen_at: Date;
  /** The absolute end: creation or sign-in plus SESSION_ABSOLUTE_TIMEOUT, or plus the remember-me age. */
  expires_at: Date;
  /** Remember-me sessions last until expires_at; the others also end after SESSION_IDLE_TIMEOUT unused. */
  remember_me: ColumnType<boolean, boolean | undefined, boolean>;
  /** The signed-in reader: sealed-message id and recipient address as on record; null before sign-in. */
  message_id: string | null;
  email: string | null;
  method: SignInMethodName | null;
  signed_in_at: Date | null;
  /** The pending code: HMAC only, bound to this session, the message, the recipient and the destination. */
  code_hmac: string | null;
  code_purpose: CodePurpose | null;
  code_method: SignInMethodName | null;
  code_message_id: string | null;
  code_email: string | null;
  /** Where the code went: E.164 number or email address. */
  code_destination: string | null;
  code_created_at: Date | null;
  /**
   * Wrong tries; it stays with the session when a resend replaces the code, so a resend gives no new tries
   * (docs/design.md#codes).
   */
  code_failed_attempts: ColumnType<number, number | undefined, number>;
  /**
   * The codes the pending one replaced, newest first, while they would still be fresh (migration 0008): JSON of
   * ReplacedCode[] (codes/replaced-codes.ts), HMACs and targets only.
   */
  code_replaced: ColumnType<string | null, string | null | undefined, string | null>;
  /** Tries that met a replaced code: free for the new code, but bounded (codes/replaced-codes.ts). */
  code_replaced_tries: ColumnType<number, number | undefined, number>;
  /** The number a mobile change goes to, while the code to the current number is pending (migration 0005). */
  mobile_change_to: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * The address this session proved as a sender's (migration 0007), by an email code to it: the sender's page
   * shows that address's sealed messages. Null for a recipient's session.
   */
  sender: ColumnType<string | null, string | null | undefined, string | null>;
}

/** One code sent (SMS or email): the rows the rate limits count, per destination and per client. */
export interface CodeSendsTable {
  id: Generated<number>;
  /** `sms:+41791234567` or `email:alice@example.com` (lower-cased). */
  destination: string;
  /** Client IP (IPv6 cut to its /64). */
  client: string;
  sent_at: Date;
}

/**
 * One code request checked against the refusal limits: written before the recipient is looked up and
 * deleted again unless the request was refused (unauthorized_user, forbidden_auth_method,
 * email_and_mobile_mismatch), so the rows that stay are the refusals, per message and per client.
 */
export interface CodeRefusalsTable {
  id: Generated<number>;
  message_id: string;
  /** Client IP (IPv6 cut to its /64), as in code_sends. */
  client: string;
  refused_at: Date;
}

/**
 * A recipient's confirmed new mobile number (PUT /v1/mobile). The seal service's record is immutable,
 * so the change lives here, keyed by message and recipient, and wins over the number on record.
 */
export interface MobileOverridesTable {
  message_id: string;
  /** The recipient's address, lower-cased (the seal service compares addresses the same way). */
  email_key: string;
  mobile: string;
  updated_at: Date;
}

/**
 * The reply a recipient is writing to a sealed message: one open draft per (message, recipient), so a
 * second device signed in as the same recipient continues it. `updated_at` is its last change (text saved,
 * file added or removed): the retention period (ATTACHMENTS_RETENTION_PERIOD) counts from it.
 */
export interface DraftsTable {
  id: Generated<string>;
  message_id: string;
  /** The recipient's address, lower-cased (as in mobile_overrides). */
  email_key: string;
  text: ColumnType<string, string | undefined, string>;
  html: string | null;
  bcc: string | null;
  created_at: ColumnType<Date, Date, never>;
  updated_at: Date;
  /** Set while POST /v1/message/reply submits it, so a second click does not send it twice. */
  sending_since: Date | null;
  /** Set once the exchange engine accepted it; the watcher removes what is left of a sent draft. */
  sent_at: Date | null;
}

/** `uploading`: the row exists before the object, so a crash mid-upload leaves a row the watcher finds. */
export type DraftFileState = 'uploading' | 'stored';

export interface DraftFilesTable {
  id: string;
  draft_id: string;
  object_key: string;
  /** The name the reader gave, cleaned (no path, no control characters). */
  filename: string;
  size: ColumnType<number, number | undefined, number>;
  /** What the reply will carry: the detected type, or one guessed from the name when the content has no signature. */
  content_type: string;
  /** The MIME type file-type found in the content's magic bytes; null when it found none. */
  detected_type: string | null;
  /** clamd scanned it and found nothing (false: scanning is off, or clamd was down and not required). */
  scanned: ColumnType<boolean, boolean | undefined, boolean>;
  state: DraftFileState;
  created_at: ColumnType<Date, Date, never>;
}

/**
 * The version of a recipient's reply to a message (migration 0004): raised by every change to the draft
 * (text saved, file added or removed, sent), kept across drafts so that it never goes back.
 */
export interface DraftVersionsTable {
  message_id: string;
  email_key: string;
  version: number;
  /** When the reply was last sent, and the version that send gave it (migration 0008); null before. */
  sent_at: Date | null;
  sent_version: number | null;
}

/**
 * What a session proved (migration 0005): `email` by an email code (mobile ''), `sms` by an SMS code to
 * that mobile number for that address.
 */
export interface SessionFactorsTable {
  session_id: string;
  method: SignInMethodName;
  email_key: string;
  email: string;
  mobile: ColumnType<string, string | undefined, string>;
  proven_at: ColumnType<Date, Date | undefined, never>;
}

/** A sealed message the session may open, as the recipient `email` signing in by `method`. */
export interface SessionGrantsTable {
  session_id: string;
  message_id: string;
  email: string;
  method: SignInMethodName;
  granted_at: ColumnType<Date, Date | undefined, never>;
}

export type SessionRow = Selectable<SessionsTable>;
export type DraftRow = Selectable<DraftsTable>;
export type DraftFileRow = Selectable<DraftFilesTable>;
