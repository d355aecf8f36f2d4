import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { Envelope } from '../tables.ts';
import { EnvelopeFinisher, type FinisherDeps } from './retention.ts';

describe('finishing delivered envelopes', () => {
  it('deletes the payloads of envelopes finished together in one bulk call, then their rows', async () => {
    const bulk: string[][] = [];
    const single: string[] = [];
    const removed: string[] = [];
    const objects = {
      deleteMany: async (keys: string[]) => void bulk.push([...keys]),
      delete: async (key: string) => void single.push(key),
    } as unknown as ObjectStore;
    const queue = { remove: async (id: string) => void removed.push(id) } as unknown as FinisherDeps['queue'];
    const finisher = new EnvelopeFinisher({ objects, queue } as FinisherDeps);
    const envelopes = Array.from(
      { length: 40 },
      (_, i) => ({ id: `e${i}`, payload_key: `exchange/payloads/e${i}`, bounce_report: null }) as unknown as Envelope,
    );

    await Promise.all(envelopes.map((envelope) => finisher.finish(envelope)));

    assert.deepEqual(single, [], 'no payload deleted on its own');
    assert.ok(bulk.length <= 2, `${bulk.length} bulk calls for 40 payloads`);
    assert.deepEqual(bulk.flat().sort(), envelopes.map((e) => e.payload_key).sort());
    assert.deepEqual(removed.sort(), envelopes.map((e) => e.id).sort(), 'every row removed, after its payload');
  });

  it('holds payload deletions while the intake is busy and sends them in one call when it goes quiet', async () => {
    const bulk: string[][] = [];
    const removed: string[] = [];
    let busy = true;
    const objects = { deleteMany: async (keys: string[]) => void bulk.push([...keys]) } as unknown as ObjectStore;
    const queue = { remove: async (id: string) => void removed.push(id) } as unknown as FinisherDeps['queue'];
    const finisher = new EnvelopeFinisher({ objects, queue, intakeBusy: () => busy } as FinisherDeps);
    const finished: Array<Promise<void>> = [];
    for (let i = 0; i < 6; i++) {
      finished.push(
        finisher.finish({
          id: `e${i}`,
          payload_key: `exchange/payloads/e${i}`,
          bounce_report: null,
        } as unknown as Envelope),
      );
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    assert.equal(bulk.length, 0, 'no deletion while the intake is busy');
    assert.equal(removed.length, 0, 'and no row removed before its payload');
    busy = false;
    await Promise.all(finished);
    assert.equal(bulk.length, 1, 'one bulk call once the intake is quiet');
    assert.equal(bulk[0]!.length, 6);
    assert.equal(removed.length, 6);
  });

  it('does not hold the deletion a delivery worker is waiting for', async () => {
    const bulk: string[][] = [];
    const objects = { deleteMany: async (keys: string[]) => void bulk.push([...keys]) } as unknown as ObjectStore;
    const queue = { remove: async () => {} } as unknown as FinisherDeps['queue'];
    const finisher = new EnvelopeFinisher({ objects, queue, intakeBusy: () => true } as FinisherDeps);
    const envelope = (i: number) =>
      ({ id: `e${i}`, payload_key: `exchange/payloads/e${i}`, bounce_report: null }) as unknown as Envelope;
    await finisher.finishSoon(envelope(1), 5);
    await finisher.finishSoon(envelope(2), 5);
    assert.equal(bulk.length, 0, 'clean-ups under the limit are held');
    const started = performance.now();
    // Over the limit (maxPending 1): the worker waits for its own clean-up, which goes at once with the rest.
    await finisher.finishSoon(envelope(3), 1);
    assert.ok(performance.now() - started < 1000, 'not held for DELETION_HOLD_MAX_MS');
    assert.deepEqual(bulk.flat().sort(), ['exchange/payloads/e1', 'exchange/payloads/e2', 'exchange/payloads/e3']);
  });

  it('holds no deletion back once it drains at shutdown', async () => {
    const bulk: string[][] = [];
    const objects = { deleteMany: async (keys: string[]) => void bulk.push([...keys]) } as unknown as ObjectStore;
    const queue = { remove: async () => {} } as unknown as FinisherDeps['queue'];
    const finisher = new EnvelopeFinisher({ objects, queue, intakeBusy: () => true } as FinisherDeps);
    const envelope = { id: 'e1', payload_key: 'exchange/payloads/e1', bounce_report: null } as unknown as Envelope;
    await finisher.finishSoon(envelope, 5);
    const started = performance.now();
    await finisher.drain();
    assert.ok(performance.now() - started < 1000, 'not held for DELETION_HOLD_MAX_MS');
    assert.deepEqual(bulk, [['exchange/payloads/e1']]);
  });

  it('keeps the row when the bulk delete fails, for the retention sweep', async () => {
    const removed: string[] = [];
    const objects = { deleteMany: async () => Promise.reject(new Error('store down')) } as unknown as ObjectStore;
    const queue = { remove: async (id: string) => void removed.push(id) } as unknown as FinisherDeps['queue'];
    const finisher = new EnvelopeFinisher({ objects, queue } as FinisherDeps);
    await assert.rejects(
      finisher.finish({ id: 'e1', payload_key: 'exchange/payloads/e1', bounce_report: null } as unknown as Envelope),
      /store down/,
    );
    assert.deepEqual(removed, []);
  });
});
