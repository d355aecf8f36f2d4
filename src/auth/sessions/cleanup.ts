import type { Clock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { HourlyLimit } from '../codes/hourly-limit.ts';
import type { SessionStore } from './store.ts';

/**
 * The periodic cleanup: sessions past their end or idle too long, and rate-limit records older than the
 * hour they count for. Every instance runs it; the deletes are idempotent, so that needs no coordination.
 * Expired rows are ignored by every query anyway: this only keeps the tables small.
 */
export function startCleanup(options: {
  sessions: SessionStore;
  limits: Array<HourlyLimit<string>>;
  intervalMs: number;
  clock: Clock;
  logger: Logger;
}) {
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= (async () => {
      try {
        const now = new Date(options.clock.now());
        const sessions = await options.sessions.deleteExpired(now);
        let sends = 0;
        for (const limit of options.limits) sends += await limit.deleteOld(now);
        if (sessions + sends > 0)
          options.logger.info({ sessions, codeSends: sends }, 'expired sessions and rate-limit records deleted');
      } catch (error) {
        options.logger.warn({ err: error }, 'session cleanup failed; next try at the next interval');
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  const timer = setInterval(run, options.intervalMs);
  timer.unref();
  return {
    run,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
