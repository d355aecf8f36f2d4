/**
 * The wait before the next attempt after attempt number `attempt` (1-based) failed: exponential from
 * `baseMs` (the first retry comes after about DELIVERY_RETRY_BASE), capped at `maxMs`, with jitter.
 *
 * Jitter: the nominal delay is shortened by up to 20 % at random, so messages that failed together
 * (a relay outage) do not all come back in the same instant, while no delay ever exceeds the cap and
 * the sequence still grows step by step (each nominal step doubles, and 0.8 × 2d > d).
 */
export function retryDelayMs(attempt: number, options: { baseMs: number; maxMs: number }, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 52);
  const nominal = Math.min(options.maxMs, options.baseMs * 2 ** exponent);
  return Math.max(1, Math.round(nominal * (1 - 0.2 * random())));
}
