import type { Clock } from '../../src/kernel/clock.ts';

/**
 * A clock that runs with real time and jumps forward when told: a test that needs a code, a session or a
 * lease to expire advances it instead of sleeping. Real time still passes, so whatever a service writes
 * with the database's own now() (column defaults) stays close to it.
 */
export class TestClock implements Clock {
  private offsetMs = 0;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
