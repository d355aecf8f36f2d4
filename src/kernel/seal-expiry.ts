import { DurationError, parseDuration } from './duration.ts';

/**
 * `X-Sealpost-Expires` (docs/specification.md#end-dates): how long a sealed message may be read, as the sender
 * asks for it. Either a life from the moment it is sealed — whole days as `7d`, or a Go duration (`72h`,
 * `1h30m`, `2s`), or days followed by one (`1d12h`) — or an RFC 3339 time with its offset
 * (`2027-01-31T17:00:00+01:00`). The exchange refuses a malformed value at intake and the seal service
 * computes the end date from the same parser, so both read the header alike.
 */
export type SealExpiry = { lifeMs: number } | { at: Date };

/** Why a value is refused: a sentence for the sender's 5.x.x reply or 400 answer. */
export class SealExpiryError extends Error {}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;
const DAYS = /^(\d{1,5})d(.*)$/;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Parses one header value; throws SealExpiryError naming the value and what is expected. With `now`, a time
 * that is not after it is refused too: a message that could never be read is a mistake of the sender's.
 */
export function parseSealExpiry(value: string, now?: Date): SealExpiry {
  const text = value.trim();
  const refuse = (why: string) =>
    new SealExpiryError(
      `X-Sealpost-Expires: ${JSON.stringify(value)} ${why}; expected a life such as 7d, 72h or 1d12h, ` +
        'or an RFC 3339 time such as 2027-01-31T17:00:00+01:00',
    );
  const time = RFC3339.exec(text);
  if (time) {
    const [year, month, day, hour, minute, second, offsetHour, offsetMinute] = [1, 2, 3, 4, 5, 6, 9, 10].map((i) =>
      Number(time[i] ?? 0),
    ) as [number, number, number, number, number, number, number, number];
    const at = new Date(text);
    // Date() rolls 30 February over into March: the fields must name a real day and time.
    const realDay = month >= 1 && month <= 12 && new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day;
    const realTime = hour < 24 && minute < 60 && second < 60 && offsetHour < 24 && offsetMinute < 60;
    if (Number.isNaN(at.getTime()) || !realDay || !realTime) throw refuse('is not a valid time');
    if (now && at.getTime() <= now.getTime()) throw refuse('lies in the past');
    return { at };
  }
  const days = DAYS.exec(text);
  let lifeMs = 0;
  let rest = text;
  if (days) {
    lifeMs = Number(days[1]) * DAY_MS;
    rest = days[2]!;
  }
  if (rest !== '') {
    if (rest.startsWith('-') || rest.startsWith('+')) throw refuse('is not a life');
    let ns: bigint;
    try {
      ns = parseDuration(rest);
    } catch (error) {
      if (error instanceof DurationError) throw refuse('is not a duration');
      throw error;
    }
    lifeMs += Number(ns / 1_000_000n);
  }
  if (!(lifeMs > 0)) throw refuse('is no life at all');
  return { lifeMs };
}

/**
 * The end date of a message sealed at `sealedAt`: the sender's ask (when given) or the organisation's default
 * life, held to its maximum (the seal service's settings); undefined when neither the ask nor the default sets
 * one and no maximum applies.
 */
export function sealEndDate(
  sealedAt: Date,
  asked: SealExpiry | undefined,
  rules: { defaultMs?: number; maxMs?: number },
): Date | undefined {
  const wanted =
    asked === undefined
      ? rules.defaultMs === undefined
        ? undefined
        : sealedAt.getTime() + rules.defaultMs
      : 'at' in asked
        ? asked.at.getTime()
        : sealedAt.getTime() + asked.lifeMs;
  const latest = rules.maxMs === undefined ? undefined : sealedAt.getTime() + rules.maxMs;
  const end = wanted === undefined ? latest : latest === undefined ? wanted : Math.min(wanted, latest);
  return end === undefined ? undefined : new Date(end);
}
