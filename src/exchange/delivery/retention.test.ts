import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from '../../kernel/logger.ts';
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

  it('leaves the clean-ups past its limit to the retention sweep, which deletes them in one call', async () => {
    const bulk: string[][] = [];
    const removed: string[] = [];
    const logs: string[] = [];
    const objects = { deleteMany: async (keys: string[]) => void bulk.push([...keys]) } as unknown as ObjectStore;
    const leftovers: Envelope[] = [];
    const queue = {
      remove: async (id: string) => void removed.push(id),
      claimUnfinished: async (limit: number) => leftovers.splice(0, limit),
    } as unknown as FinisherDeps['queue'];
    const logger = { info: (_: unknown, msg: string) => logs.push(msg), warn: () => {} } as unknown as Logger;
    // The intake is busy: the deletions under way are held, so the first two stay pending.
    const finisher = new EnvelopeFinisher({ objects, queue, logger, intakeBusy: () => true } as FinisherDeps);
    const envelope = (i: number) =>
      ({ id: `e${i}`, payload_key: `exchange/payloads/e${i}`, bounce_report: null }) as unknown as Envelope;

    for (let i = 1; i <= 4; i++) finisher.finishSoon(envelope(i), 2);
    assert.equal(logs.filter((msg) => msg.startsWith('payload deletions are behind')).length, 1, 'said once');
    await finisher.drain();
    assert.deepEqual(bulk.flat().sort(), ['exchange/payloads/e1', 'exchange/payloads/e2']);
    assert.deepEqual(removed.sort(), ['e1', 'e2'], 'the rows past the limit stay for the sweep');

    leftovers.push(envelope(3), envelope(4));
    assert.equal(await finisher.sweep(0), 2);
    assert.deepEqual(bulk.at(-1)!.sort(), ['exchange/payloads/e3', 'exchange/payloads/e4'], 'one call for both');
    assert.deepEqual(removed.sort(), ['e1', 'e2', 'e3', 'e4']);
  });

  it('never leaves a bounce for later, whatever the number of clean-ups under way', async () => {
    const bulk: string[][] = [];
    const logs: string[] = [];
    const objects = { deleteMany: async (keys: string[]) => void bulk.push([...keys]) } as unknown as ObjectStore;
    const queue = { remove: async () => {} } as unknown as FinisherDeps['queue'];
    const logger = { info: (_: unknown, msg: string) => logs.push(msg), warn: () => {} } as unknown as Logger;
    const finisher = new EnvelopeFinisher({ objects, queue, logger } as FinisherDeps);
    // A failed envelope whose report calls for a bounce (refused here: its sender is the null sender).
    const failed = {
      id: 'f1',
      sender: '',
      payload_key: 'exchange/payloads/f1',
      bounce_report: { recipients: [{ recipient: 'a@example.org' }] },
    } as unknown as Envelope;
    const delivered = { id: 'd1', payload_key: 'exchange/payloads/d1', bounce_report: null } as unknown as Envelope;

    finisher.finishSoon(delivered, 0);
    finisher.finishSoon(failed, 0);
    await finisher.drain();
    assert.ok(logs.includes('no bounce'), 'the bounce step ran at once');
    assert.deepEqual(bulk.flat(), ['exchange/payloads/f1'], 'the delivered one waits for the sweep');
  });

  it('holds no deletion back once it drains at shutdown', async () => {
    const bulk: string[][] = [];
    const objects = { deleteMany: async (keys: string[]) => void bulk.push([...keys]) } as unknown as ObjectStore;
    const queue = { remove: async () => {} } as unknown as FinisherDeps['queue'];
    const finisher = new EnvelopeFinisher({ objects, queue, intakeBusy: () => true } as FinisherDeps);
    const envelope = { id: 'e1', payload_key: 'exchange/payloads/e1', bounce_report: null } as unknown as Envelope;
    finisher.finishSoon(envelope, 5);
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
