/**
 * Where services and their workers take the time from. Injected (ServiceContext.clock), so that tests
 * move time forward instead of sleeping; timers stay real, what they compare against is this clock.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** What a test sends a `sealpost start` child over its IPC channel to move the child's clock. */
export interface ClockMove {
  advanceClockMs: number;
}

/**
 * The clock of a `sealpost start` run by a test as a child process with an IPC channel: the system clock
 * plus what the parent moved it by (`{ advanceClockMs }`, answered with `{ clockMovedMs }`, the total).
 * Only with NODE_ENV=test and an IPC channel, which only a parent that spawned the process can open: no
 * door for anyone else. Elsewhere the system clock.
 */
export function clockFor(nodeEnv: string): Clock {
  if (nodeEnv !== 'test' || !process.send || !process.channel) return systemClock;
  let movedMs = 0;
  process.on('message', (message: Partial<ClockMove>) => {
    if (typeof message?.advanceClockMs !== 'number' || !(message.advanceClockMs >= 0)) return;
    movedMs += message.advanceClockMs;
    process.send?.({ clockMovedMs: movedMs });
  });
  // The channel must not keep a stopped process alive.
  process.channel.unref();
  return { now: () => Date.now() + movedMs };
}
