import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Claim, EnvelopeQueue } from './queue.ts';
import { startTestDelivery } from '../../../test/support/exchange-delivery.ts';

/** Far longer than the test may take: a stop() that waited for the next poll would hang it. */
const POLL_INTERVAL_MS = 3_600_000;

describe('stopping the delivery workers', () => {
  for (const outcome of ['finds nothing', 'fails'] as const) {
    it(`ends at once when stop() comes while a claim is running that ${outcome}`, async () => {
      let claimStarted!: () => void;
      const claiming = new Promise<void>((resolve) => (claimStarted = resolve));
      let endClaim!: () => void;
      const claimHeld = new Promise<void>((resolve) => (endClaim = resolve));
      const queue = {
        claimDue: async (): Promise<Claim[]> => {
          claimStarted();
          await claimHeld;
          if (outcome === 'fails') throw new Error('the database went away');
          return [];
        },
        renewLeases: async () => [],
      } as unknown as EnvelopeQueue;
      const workers = startTestDelivery({
        queue,
        deliver: async () => {},
        concurrency: 4,
        pollIntervalMs: POLL_INTERVAL_MS,
        leaseMs: 60_000,
      });
      await claiming;
      let stopped = false;
      const stopping = workers.stop().then(() => (stopped = true));
      endClaim();
      const timer = new Promise((resolve) => setTimeout(resolve, 5_000).unref());
      await Promise.race([stopping, timer]);
      assert.equal(stopped, true, 'stop() ended without waiting for the poll interval');
    });
  }
});
