/**
 * Where services and their workers take the time from. Injected (ServiceContext.clock), so that tests
 * move time forward instead of sleeping; timers stay real, what they compare against is this clock.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
