// S3 deletions: how long a DeleteObjects call of N keys takes on the real S3-compatible server here (Swift's
// s3api, which deletes the keys of one call one by one behind it), idle and while puts of the same size go on
// beside it as an intake's would, next to a baseline in the same run: the same keys deleted one DELETE each,
// 2 at a time. What it decides: the keys per call (S3_DELETE_BATCH's default, src/kernel/objects/s3.ts) such
// that a call ends well within its time limit under load, at a rate that keeps up with delivery.
//
//   node --import tsx bench/s3-deletes.ts [--keys 3000] [--batches 100,250,500,1000] [--size 10240]
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createS3ObjectStore } from '../src/kernel/objects/s3.ts';
import { startS3Server, uniqueBucket } from '../test/support/s3-server.ts';
import { printResult } from './support/result.ts';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '3000' },
    batches: { type: 'string', default: '100,250,500,1000' },
    size: { type: 'string', default: '10240' },
  },
});
const keyCount = Number(values.keys);
const batches = values.batches.split(',').map(Number);
const body = Buffer.alloc(Number(values.size), 'x');

const s3 = await startS3Server();
const bucket = uniqueBucket('deletes');
const store = createS3ObjectStore({ ...s3, bucket, createBucket: true });
await store.ensureBucket();

async function putMany(count: number): Promise<string[]> {
  const keys = Array.from({ length: count }, () => `bench/${randomUUID()}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < keys.length) await store.put(keys[next++]!, body);
    }),
  );
  return keys;
}

/** Deletes `keys` in calls of `batch`, two calls at a time (as the exchange's deletion batcher runs them). */
async function deleteInCalls(keys: string[], batch: number): Promise<{ seconds: number; slowestCall: number }> {
  const chunks: string[][] = [];
  for (let from = 0; from < keys.length; from += batch) chunks.push(keys.slice(from, from + batch));
  let slowestCall = 0;
  const started = performance.now();
  await Promise.all(
    [0, 1].map(async () => {
      for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) {
        const call = performance.now();
        await store.deleteMany(chunk);
        slowestCall = Math.max(slowestCall, (performance.now() - call) / 1000);
      }
    }),
  );
  return { seconds: (performance.now() - started) / 1000, slowestCall };
}

/** Puts beside the deletions, 8 at a time, until `stop` resolves: the load of an intake. */
async function putsUntil(stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => (done = true));
  let puts = 0;
  const written: string[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (!done) {
        const key = `load/${randomUUID()}`;
        await store.put(key, body);
        written.push(key);
        puts++;
      }
    }),
  );
  await deleteInCalls(written, 100);
  return puts;
}

try {
  const single = await putMany(Math.min(keyCount, 600));
  const started = performance.now();
  let next = 0;
  await Promise.all(
    [0, 1].map(async () => {
      while (next < single.length) await store.delete(single[next++]!);
    }),
  );
  const singleRate = single.length / ((performance.now() - started) / 1000);
  console.log(`baseline: one DELETE per key, 2 at a time: ${singleRate.toFixed(0)} keys/s`);

  for (const batch of batches) {
    for (const load of [false, true]) {
      const keys = await putMany(keyCount);
      const deleting = deleteInCalls(keys, batch);
      const puts = load ? await putsUntil(deleting) : 0;
      const { seconds, slowestCall } = await deleting;
      const rate = keys.length / seconds;
      console.log(
        `${String(batch).padStart(5)} keys per call, ${load ? 'with puts beside' : 'idle           '}: ` +
          `${rate.toFixed(0).padStart(5)} keys/s, slowest call ${slowestCall.toFixed(1)} s` +
          (load ? `, ${(puts / seconds).toFixed(0)} puts/s beside` : ''),
      );
      printResult({
        goal: `S3 DeleteObjects, ${batch} keys per call${load ? ', puts beside' : ''}`,
        unit: 'keys/s',
        figure: Math.round(rate),
        baseline: Math.round(singleRate),
        baselineName: 'one DELETE per key',
        note: `slowest call ${slowestCall.toFixed(1)} s`,
      });
    }
  }
} finally {
  await store.close();
  await s3.stop();
}
