import type { Kysely } from 'kysely';
import { AppError, type ErrorCode } from '../../kernel/errors.ts';
import type { AuthTables } from '../tables.ts';
import { HourlyLimit } from './hourly-limit.ts';

/** The code sends: per destination (mobile number, or address for email codes) and per client IP. */
export type SendLimit = HourlyLimit<'destination' | 'client'>;
/** The refused code requests: per client IP and per message. */
export type RefusalLimit = HourlyLimit<'client' | 'message_id'>;

export interface SendLimits {
  /** Shortest gap between two codes to one destination; 0 turns it off. */
  destinationIntervalMs: number;
  destinationHourly: number;
  clientHourly: number;
}

/**
 * The SMS rate limits (docs/design.md#rate-limits). A send is counted before the code goes and released
 * again if the provider fails (a provider outage must not lock users out).
 */
export function sendLimit(db: Kysely<AuthTables>, limits: SendLimits): SendLimit {
  return new HourlyLimit(db, {
    table: 'code_sends',
    at: 'sent_at',
    counted: [
      { column: 'destination', perHour: limits.destinationHourly, lockName: 'destination' },
      { column: 'client', perHour: limits.clientHourly, lockName: 'client' },
    ],
    interval: { column: 'destination', ms: limits.destinationIntervalMs },
  });
}

/**
 * Refused code requests a client IP may make per hour, as a multiple of SMS_LIMIT_IP_HOURLY (default
 * 20 → 40). A reader who mistypes their address or number a few times stays far below it; someone
 * cycling numbers to learn which one is on record reaches it, and from then on gets sms_rate_limit for
 * the right number too, so the answers stop telling them anything.
 */
export const REFUSALS_PER_CLIENT_FACTOR = 2;

/**
 * Refused code requests for one message per hour, from all clients together, as a multiple of
 * SMS_LIMIT_IP_HOURLY (default 20 → 100): the bound for a prober with many addresses. Higher than the
 * per-client bound so that one client alone cannot shut a message's recipients out; once reached,
 * every code request for the message is refused until the hour has passed (answering the right number
 * would again tell the prober which number is right).
 */
export const REFUSALS_PER_MESSAGE_FACTOR = 5;

/** The code request errors that tell the asker something about the recipients of a message. */
const PROBE_REFUSALS = new Set<ErrorCode | undefined>([
  'unauthorized_user',
  'forbidden_auth_method',
  'email_and_mobile_mismatch',
]);

export function isProbeRefusal(error: unknown): boolean {
  return error instanceof AppError && PROBE_REFUSALS.has(error.errorCode);
}

/**
 * The limits on refused code requests (without them, anyone with a reader link could try numbers and
 * addresses for free: docs/design.md#rate-limits), derived from the per-IP send limit (SMS_LIMIT_IP_HOURLY).
 * A request is counted before the recipient is looked up, so parallel requests cannot overshoot, and
 * released when the lookup did not refuse it.
 */
export function refusalLimit(db: Kysely<AuthTables>, clientHourly: number): RefusalLimit {
  return new HourlyLimit(db, {
    table: 'code_refusals',
    at: 'refused_at',
    counted: [
      { column: 'client', perHour: clientHourly * REFUSALS_PER_CLIENT_FACTOR, lockName: 'client' },
      { column: 'message_id', perHour: clientHourly * REFUSALS_PER_MESSAGE_FACTOR, lockName: 'message' },
    ],
  });
}
