import { timingSafeEqual } from 'node:crypto';

/** What a replaced code was for (pending-codes.ts's CodeTarget, which imports this file): its purpose and more. */
interface Target {
  purpose: string;
}

/**
 * How many replaced codes a session keeps: a reader who asked three times and then types the first SMS's code
 * is still told what happened. More would only widen what a guess can meet.
 */
export const REPLACED_KEPT = 3;

/** A code a newer one replaced: its HMAC (never the code), what it was for, and when it was made. */
export interface ReplacedCode<T extends Target = Target> {
  hmac: string;
  createdAt: number;
  target: T;
}

/** The session's replaced codes from their column (JSON); anything unreadable counts as none. */
export function readReplaced<T extends Target>(column: string | null): ReplacedCode<T>[] {
  if (!column) return [];
  try {
    const parsed: unknown = JSON.parse(column);
    return Array.isArray(parsed) ? (parsed as ReplacedCode<T>[]) : [];
  } catch {
    return [];
  }
}

/**
 * The list after `replaced` (the code a new one replaces now) joins it: newest first, only codes that would still
 * be fresh, at most REPLACED_KEPT. Null when none is left, so the column holds nothing for most sessions.
 */
export function keepReplaced<T extends Target>(
  earlier: ReplacedCode<T>[],
  replaced: ReplacedCode<T> | undefined,
  now: Date,
  lifetimeMs: number,
): string | null {
  const kept = [...(replaced ? [replaced] : []), ...earlier]
    .filter((code) => now.getTime() - code.createdAt <= lifetimeMs)
    .slice(0, REPLACED_KEPT);
  return kept.length > 0 ? JSON.stringify(kept) : null;
}

/**
 * Whether `submitted` is one of the fresh replaced codes of `purpose`. Every kept code is compared, in constant
 * time, whichever matched: the time taken tells nothing of which one, or whether any.
 */
export function isReplaced<T extends Target>(
  replaced: ReplacedCode<T>[],
  purpose: T['purpose'],
  hmacOf: (target: T) => string,
  now: Date,
  lifetimeMs: number,
): boolean {
  let found = false;
  for (const code of replaced) {
    const same = timingSafeEqual(Buffer.from(hmacOf(code.target), 'hex'), Buffer.from(code.hmac, 'hex'));
    const usable = code.target.purpose === purpose && now.getTime() - code.createdAt <= lifetimeMs;
    found = (same && usable) || found;
  }
  return found;
}
