import { PeriodicPass } from '../../kernel/periodic-pass.ts';
import type { Logger } from '../../kernel/logger.ts';
import type { TrailStore } from './trail-store.ts';

const INTERVAL_MS = 60 * 60 * 1000;

/**
 * Deletes trail entries older than SEAL_TRAIL_RETENTION, hourly: the trail's only deletion, and one the database
 * allows for old entries alone (migration 0006). Ten years by default, so a pass usually finds nothing.
 */
export class TrailRetention {
  private readonly pass = new PeriodicPass({
    run: () => this.runOnce(),
    nextDelayMs: () => INTERVAL_MS,
    onError: (error) => this.options.logger.error({ err: error }, 'trail retention pass failed'),
  });

  constructor(private readonly options: { store: TrailStore; retentionMs: number; logger: Logger }) {}

  start(): void {
    this.pass.start();
  }

  stop(): Promise<void> {
    return this.pass.stop();
  }

  /** One pass; returns how many entries were deleted. */
  async runOnce(): Promise<number> {
    const deleted = await this.options.store.deleteOlderThan(this.options.retentionMs);
    if (deleted > 0) this.options.logger.info({ deleted }, 'trail entries past SEAL_TRAIL_RETENTION deleted');
    return deleted;
  }
}
