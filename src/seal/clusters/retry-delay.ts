/** The longest setTimeout Node takes (2^31 − 1 ms); a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** The longest wait before a cluster call that failed (a pin, an unpin) is tried again. */
const MAX_RETRY_DELAY_MS = 60 * 60 * 1000;

/** A setting's interval as a timer can take it: at least 1 ms, at most MAX_TIMER_MS. */
export const timerMs = (ms: number) => Math.max(1, Math.min(ms, MAX_TIMER_MS));

/** The wait before attempt `attempts + 1` of a failed cluster call: `firstMs`, doubling, up to an hour. */
export const retryDelayMs = (firstMs: number, attempts: number) =>
  Math.min(firstMs * 2 ** Math.min(attempts - 1, 30), MAX_RETRY_DELAY_MS);
