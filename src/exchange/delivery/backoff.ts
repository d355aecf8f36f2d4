/**
 * The wait before the next attempt after attempt number `attempt` (1-based) failed: exponential from
 * `baseMs` (the first retry comes after DELIVERY_RETRY_BASE, never before), capped at `maxMs`, with jitter.
 *
 * Jitter: the nominal delay is lengthened by up to 20 % at random, so messages that failed together
 * (a relay outage) do not all come back in the same instant, while no delay is shorter than its nominal
 * step or longer than the cap, and the sequence still grows step by step until the cap (each nominal
 * step doubles, and 1.2 × d < 2d).
 */
export function retryDelayMs(
  attempt: number,
  options: { baseMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 52);
  const nominal = Math.min(options.maxMs, options.baseMs * 2 ** exponent);
  return Math.max(1, Math.min(options.maxMs, Math.round(nominal * (1 + 0.2 * random()))));
}
