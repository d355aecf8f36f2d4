import type { MobileSource, SignInMethodName, TrailDetail, TrailEventName } from '../contracts/seal.ts';
import type { Language } from '../kernel/languages.ts';
import type { ColumnType, Generated, Selectable } from 'kysely';

/** The seal schema (PostgreSQL schema `seal`), as Kysely sees it. */
export interface SealTables {
  cluster_configs: ClusterConfigsTable;
  sealed_messages: SealedMessagesTable;
  sealed_recipients: SealedRecipientsTable;
  sealed_pins: SealedPinsTable;
  seal_end_work: SealEndWorkTable;
  sealed_trail: SealedTrailTable;
  seal_scrub_due: SealScrubDueTable;
  seal_scrub_copies: SealScrubCopiesTable;
  contacts: ContactsTable;
  confirmed_mobiles: ConfirmedMobilesTable;
  seal_key_versions: SealKeyVersionsTable;
  seal_key_rotations: SealKeyRotationsTable;
}

type CreatedAt = ColumnType<Date, Date | undefined, never>;

/** Every configuration stored through POST /v1/ipfs/config; the newest row is "the stored one". */
export interface ClusterConfigsTable {
  id: Generated<number>;
  /** ClusterSettings[] with each `pass` replaced by its secret-box form (wrapped by a master key version). */
  clusters: ColumnType<StoredCluster[], string, string>;
  created_at: CreatedAt;
}

export interface StoredCluster {
  host: string;
  port: string;
  user?: string;
  /** `k<version>.<base64url>` (`v1.` before key versions): AES-256-GCM under a key version (crypto/secret-box.ts). */
  passEncrypted?: string;
  secure: boolean;
  timeout: string;
  addParams?: Record<string, boolean>;
  pinParams?: { replicationFactorMin?: number; replicationFactorMax?: number; name?: string; expireIn?: string };
  /** The cluster's IPFS API, `http://host:port`; absent: its host on IPFS_PROXY_PORT. */
  ipfsApi?: string;
}

export type SignInMethod = SignInMethodName;
export type { MobileSource };
/**
 * `pinning`: accepted by the cluster, not yet held by its peers; `pin_error`: refused, unreachable or failed in IPFS.
 */
export type PinStatus = 'pinning' | 'pinned' | 'pin_error';

export interface SealedMessagesTable {
  id: string;
  /** The exchange's envelope id: sealing the same envelope again finds this record (idempotency). */
  envelope_id: string;
  /** The root the clusters pin. */
  cid: string;
  /** The file sits in a wrapping directory (addParams.wrap): read /ipfs/<cid>/<file_name>. */
  wrapped: boolean;
  file_name: string;
  /** SHA-256 of the plaintext (the raw message as received), hex. */
  sha256: string;
  size: number;
  /**
   * The message key, wrapped by a master key version and bound to this id (crypto/secret-box.ts); null once
   * the message ended: the key is destroyed, so the content on IPFS can never be decrypted again.
   */
  wrapped_key: string | null;
  /** The master key version that wrapped `wrapped_key` (the version its prefix names). */
  key_version: number;
  sender: string;
  subject: string;
  sealed_at: CreatedAt;
  /** The end date (X-Sealpost-Expires, SEAL_DEFAULT_EXPIRY, SEAL_MAX_EXPIRY); null: it does not end by itself. */
  expires_at: Date | null;
  /** When it ended (for an expiry: its end date); null while it runs. Final once set. */
  ended_at: Date | null;
  end_reason: EndReason | null;
  /** A withdrawal's reason, as the operator gave it. */
  end_note: string | null;
}

export type EndReason = 'expired' | 'withdrawn';

export interface SealedRecipientsTable {
  sealed_id: string;
  position: number;
  /** Normalised address as on record. */
  email: string;
  /** Lower-cased email: the lookup key (addresses compare case-insensitively here). */
  email_key: string;
  method: SignInMethod;
  /** E.164 */
  mobile: string | null;
  /** X-Sealpost-Language for this recipient (or the directory's); null: the services' default. */
  language: Language | null;
  /** Where `mobile` came from (migration 0009); null: no number, the recipient signs in by email. */
  mobile_source: MobileSource | null;
  /** When the message was withdrawn for this recipient alone; null: they may read (unless it ended). */
  withdrawn_at: Date | null;
  withdraw_note: string | null;
}

export interface SealedPinsTable {
  sealed_id: string;
  /** `host:port` of the cluster. */
  cluster: string;
  position: number;
  status: PinStatus;
  error: string | null;
  attempts: number;
  /**
   * When the follower looks again: a `pinning` pin is asked for its status, a `pin_error` one is pinned
   * again. Also a lease: a claimed row is pushed ahead while it is worked on. Null once pinned.
   */
  next_attempt_at: Date | null;
  /** When the seal was reported as not pinned here past SEAL_PIN_DEADLINE (once). */
  overdue_at: Date | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/**
 * What is left to do after a message ended for everyone: ask one cluster to unpin its CID. At least once:
 * a row is deleted only when the cluster confirmed (or no longer had the pin); failures wait and retry.
 */
export interface SealEndWorkTable {
  sealed_id: string;
  /** `host:port` of the cluster. */
  cluster: string;
  cid: string;
  attempts: ColumnType<number, number | undefined, number>;
  /** Why the last attempt failed. */
  error: string | null;
  /** When the row is due; also a lease while an instance works on it. */
  next_attempt_at: Date;
  created_at: CreatedAt;
}

/**
 * The trail of a sealed message (docs/specification.md#trail): append-only, the database refuses an UPDATE and the
 * DELETE of an entry younger than SEAL_TRAIL_RETENTION (migration 0006).
 */
export interface SealedTrailTable {
  /** The order written. */
  seq: Generated<string>;
  sealed_id: string;
  at: Date;
  event: TrailEventName;
  /** Normalised address; null for the message's own events (sealed, an end for everyone, an end date). */
  recipient: string | null;
  /** The client's address, masked as the logs mask it (by the service that reports the event). */
  client: string | null;
  detail: ColumnType<TrailDetail | null, string | null, never>;
  /** The first entry of its event for its recipient (a partial unique index keeps it one). */
  first: ColumnType<boolean, boolean | undefined, never>;
}

/** When a running message's copies are due to be read again by the scrub; also the lease of the instance on it. */
export interface SealScrubDueTable {
  sealed_id: string;
  due_at: Date;
}

/** A copy the scrub found damaged (fails verification) or missing; deleted when found intact again. */
export interface SealScrubCopiesTable {
  sealed_id: string;
  /** `host:port` of the cluster. */
  cluster: string;
  state: 'damaged' | 'missing';
  /** What the check or the cluster said. */
  detail: string;
  /** What was done about it, or why the cluster cannot repair it. */
  repair: string;
  /** When the scrub first found it so (kept while the state holds). */
  found_at: Date;
  checked_at: Date;
}

/** The operator's contacts directory (migration 0009): a number and a language per recipient address. */
export interface ContactsTable {
  /** Lower-cased normalised address: the key sealed_recipients.email_key is compared with. */
  email_key: string;
  /** The normalised address as last imported. */
  email: string;
  /** E.164 */
  mobile: string;
  language: Language | null;
  updated_at: Date;
}

/**
 * The number a recipient proved to the auth service (a mobile change, or one added after an email sign-in),
 * written by auth through PUT /v1/recipients/{email}/mobile; it applies to the recipient's later messages.
 */
export interface ConfirmedMobilesTable {
  email_key: string;
  email: string;
  /** E.164 */
  mobile: string;
  confirmed_at: Date;
  /** The sealed message the recipient was reading when they proved it. */
  confirmed_on: string | null;
  /** The number it replaced (a mobile change; null for a number added): a header naming that one gives way. */
  replaces: string | null;
}

export type Contact = Selectable<ContactsTable>;
/** A check value per master key version ever used: proves at start that version N is still the same key. */
export interface SealKeyVersionsTable {
  version: number;
  /** A fixed text wrapped by the version (crypto/secret-box.ts keyCheckLabel). */
  check_value: string;
  first_used_at: CreatedAt;
}

/** A rotation asked for: re-wrap everything under `version`; also the lease of the instance doing it. */
export interface SealKeyRotationsTable {
  /** The version everything is re-wrapped under. */
  version: number;
  requested_at: Date;
  /** When nothing was left wrapped by another version; null while it runs. */
  finished_at: Date | null;
  /** Message keys and cluster passwords re-wrapped so far, by every instance. */
  rewrapped: ColumnType<string, string | number | undefined, string | number>;
  /** The instance holding the re-wrap (a random id per process). */
  lease_holder: string | null;
  /** Until when that instance holds it; null or past: free to take. */
  lease_until: Date | null;
}

export type SealedMessage = Selectable<SealedMessagesTable>;
export type SealedRecipient = Selectable<SealedRecipientsTable>;
export type SealedPin = Selectable<SealedPinsTable>;
export type SealEndWork = Selectable<SealEndWorkTable>;
export type SealedTrailEntry = Selectable<SealedTrailTable>;
