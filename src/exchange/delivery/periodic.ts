/**
 * Runs `task` every `intervalMs` (measured from the end of one run to the start of the next, so runs
 * never overlap) until stop(), which waits for a run in progress. Node fires timers longer than
 * 2^31-1 ms (~24.8 days) at once, so the interval is clamped to that.
 */
export function every(intervalMs: number, task: () => Promise<void>, options: { runFirstAfterMs?: number } = {}) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        // Tasks log their own failures; the catch only keeps a slip from becoming an unhandled rejection.
        running = task()
          .catch(() => undefined)
          .finally(() => {
            running = undefined;
            schedule(intervalMs);
          });
      },
      Math.min(Math.max(ms, 0), 2 ** 31 - 1),
    );
    timer.unref();
  };
  schedule(options.runFirstAfterMs ?? intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
