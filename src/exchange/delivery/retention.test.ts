import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from '../../kernel/logger.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { Envelope } from '../tables.ts';
import { CLEANUPS_WAITING_MAX, EnvelopeFinisher, type FinisherDeps } from './retention.ts';

const envelope = (i: number) =>
  ({ id: `e${i}`, payload_key: `exchange/payloads/e${i}`, bounce_report: null }) as unknown as Envelope;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A finisher whose store, queue and logger record what they are asked: bulk deletions, single deletions,
 * rows removed, log lines; the sweep claims what the test puts in `leftovers`.
 */
function recordingFinisher(options: Partial<FinisherDeps> = {}) {
  const bulk: string[][] = [];
  const single: string[] = [];
  const removed: string[] = [];
  const logs: Array<[unknown, string]> = [];
  const leftovers: Envelope[] = [];
  const objects = {
    deleteMany: async (keys: string[]) => void bulk.push([...keys]),
    delete: async (key: string) => void single.push(key),
  } as unknown as ObjectStore;
  const queue = {
    remove: async (id: string) => void removed.push(id),
    claimUnfinished: async (limit: number) => leftovers.splice(0, limit),
  } as unknown as FinisherDeps['queue'];
  const logger = { info: (fields: unknown, msg: string) => logs.push([fields, msg]) } as unknown as Logger;
  const finisher = new EnvelopeFinisher({ objects, queue, logger, ...options } as FinisherDeps);
  return { finisher, bulk, single, removed, logs, leftovers };
}

describe('finishing delivered envelopes', () => {
  it('deletes the payloads of envelopes finished together in one bulk call, then their rows', async () => {
    const { finisher, bulk, single, removed } = recordingFinisher();
    const envelopes = Array.from({ length: 40 }, (_, i) => envelope(i));

    await Promise.all(envelopes.map((envelope) => finisher.finish(envelope)));

    assert.deepEqual(single, [], 'no payload deleted on its own');
    assert.ok(bulk.length <= 2, `${bulk.length} bulk calls for 40 payloads`);
    assert.deepEqual(bulk.flat().sort(), envelopes.map((e) => e.payload_key).sort());
    assert.deepEqual(removed.sort(), envelopes.map((e) => e.id).sort(), 'every row removed, after its payload');
  });

  it('deletes only the payload of an envelope whose row went with its `delivered` mark', async () => {
    const { finisher, bulk, removed } = recordingFinisher();
    await Promise.all([finisher.finish(envelope(1), true), finisher.finish(envelope(2))]);
    assert.deepEqual(bulk.flat().sort(), ['exchange/payloads/e1', 'exchange/payloads/e2']);
    assert.deepEqual(removed, ['e2'], 'no second deletion of the row that is gone');
  });

  it('tells the orphan sweep which payloads without a row it is still deleting, waiting ones included', async () => {
    let busy = true;
    const { finisher, bulk } = recordingFinisher({ intakeBusy: () => busy, maxRunning: 1 });
    finisher.finishSoon(envelope(1), true);
    finisher.finishSoon(envelope(2), true);
    finisher.finishSoon(envelope(3));
    await sleep(30);
    assert.equal(bulk.length, 0, 'held while the intake is busy');
    assert.deepEqual(
      [1, 2, 3].map((i) => finisher.deleting(`exchange/payloads/e${i}`)),
      [true, true, false],
      'the held one and the one waiting behind it, not the one whose row is still there',
    );
    busy = false;
    for (let i = 0; i < 50 && bulk.flat().length < 3; i++) await sleep(20);
    assert.deepEqual(bulk.flat().sort(), ['exchange/payloads/e1', 'exchange/payloads/e2', 'exchange/payloads/e3']);
    assert.equal(finisher.deleting('exchange/payloads/e1') || finisher.deleting('exchange/payloads/e2'), false);
  });

  it('holds payload deletions while the intake is busy and sends them in one call when it goes quiet', async () => {
    let busy = true;
    const { finisher, bulk, removed } = recordingFinisher({ intakeBusy: () => busy });
    const finished: Array<Promise<void>> = [];
    for (let i = 0; i < 6; i++) {
      finished.push(finisher.finish(envelope(i)));
      await sleep(30);
    }
    assert.equal(bulk.length, 0, 'no deletion while the intake is busy');
    assert.equal(removed.length, 0, 'and no row removed before its payload');
    busy = false;
    await Promise.all(finished);
    assert.equal(bulk.length, 1, 'one bulk call once the intake is quiet');
    assert.equal(bulk[0]!.length, 6);
    assert.equal(removed.length, 6);
  });

  it('lets the clean-ups past its limit wait, without holding the delivery up, and starts them in turn', async () => {
    let busy = true;
    // Two clean-ups at once; while the intake is busy their deletion is held, so the next two wait.
    const { finisher, bulk, removed, logs } = recordingFinisher({ maxRunning: 2, intakeBusy: () => busy });

    for (let i = 1; i <= 4; i++) finisher.finishSoon(envelope(i));
    assert.deepEqual(
      logs.map(([, msg]) => msg),
      ['payload deletions are behind the deliveries; the clean-ups past them wait'],
      'said once',
    );
    await sleep(120);
    assert.equal(bulk.length, 0, 'held while the intake is busy');
    busy = false;
    for (let i = 0; i < 100 && removed.length < 4; i++) await sleep(20);
    assert.deepEqual(bulk[0]!.sort(), ['exchange/payloads/e1', 'exchange/payloads/e2'], 'the first two went first');
    assert.deepEqual(
      bulk.flat().sort(),
      [1, 2, 3, 4].map((i) => `exchange/payloads/e${i}`),
    );
    assert.deepEqual(removed.sort(), ['e1', 'e2', 'e3', 'e4']);
    assert.deepEqual(logs.at(-1), [
      { waited: 2, leftToSweep: 0 },
      'payload deletions are keeping up with the deliveries again',
    ]);
  });

  it('leaves the clean-ups past its waiting list, and those waiting at shutdown, to the retention sweep', async () => {
    const { finisher, bulk, removed, logs, leftovers } = recordingFinisher({ maxRunning: 1, intakeBusy: () => true });

    // One under way (held: the intake is busy), CLEANUPS_WAITING_MAX waiting, two more past them.
    for (let i = 0; i < 1 + CLEANUPS_WAITING_MAX + 2; i++) finisher.finishSoon(envelope(i));
    const started = performance.now();
    await finisher.drain();
    assert.ok(performance.now() - started < 1000, 'not held for DELETION_HOLD_MAX_MS, nor waiting for the rest');
    assert.deepEqual(bulk, [['exchange/payloads/e0']], 'only the clean-up under way ran');
    assert.deepEqual(removed, ['e0']);
    assert.deepEqual(logs.at(-1), [
      { leftToSweep: CLEANUPS_WAITING_MAX + 2 },
      'stopping: the clean-ups still waiting are left to the retention sweep',
    ]);

    // Their rows are what the sweep finds: a batch of them goes in one deletion call.
    leftovers.push(envelope(1), envelope(2), envelope(3));
    assert.equal(await finisher.sweep(0), 3);
    assert.deepEqual(
      bulk.at(-1)!.sort(),
      [1, 2, 3].map((i) => `exchange/payloads/e${i}`),
      'one call for the batch',
    );
    assert.deepEqual(removed, ['e0', 'e1', 'e2', 'e3']);
  });

  it('never lets a bounce wait, whatever the number of clean-ups under way', async () => {
    // No room at all: a delivered envelope's clean-up waits.
    const { finisher, bulk, logs } = recordingFinisher({ maxRunning: 0 });
    // A failed envelope whose report calls for a bounce (refused here: its sender is the null sender).
    const failed = {
      id: 'f1',
      sender: '',
      payload_key: 'exchange/payloads/f1',
      bounce_report: { recipients: [{ recipient: 'a@example.org' }] },
    } as unknown as Envelope;

    finisher.finishSoon(envelope(1));
    finisher.finishSoon(failed);
    await finisher.drain();
    assert.ok(
      logs.some(([, msg]) => msg === 'no bounce'),
      'the bounce step ran at once',
    );
    assert.deepEqual(bulk.flat(), ['exchange/payloads/f1'], 'the delivered one waited');
  });

  it('holds no deletion back once it drains at shutdown', async () => {
    const { finisher, bulk } = recordingFinisher({ intakeBusy: () => true });
    finisher.finishSoon(envelope(1));
    const started = performance.now();
    await finisher.drain();
    assert.ok(performance.now() - started < 1000, 'not held for DELETION_HOLD_MAX_MS');
    assert.deepEqual(bulk, [['exchange/payloads/e1']]);
  });

  it('keeps the row when the bulk delete fails, for the retention sweep', async () => {
    const objects = { deleteMany: async () => Promise.reject(new Error('store down')) } as unknown as ObjectStore;
    const { finisher, removed } = recordingFinisher({ objects });
    await assert.rejects(finisher.finish(envelope(1)), /store down/);
    assert.deepEqual(removed, []);
  });
});
