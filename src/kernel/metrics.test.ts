import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';

const METRICS = new URL('./metrics.ts', import.meta.url).href;

/** The main thread's voluntary context switches: how often it went to sleep, so how often it was woken. */
function wakeUps(pid: number): number {
  return Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

test('an idle process with the three services’ metrics registries is not woken a hundred times a second', async () => {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '--eval',
      `const { createRegistry } = await import(${JSON.stringify(METRICS)});
       for (const name of ['auth', 'seal', 'exchange']) createRegistry(name);
       console.log('ready');
       setTimeout(() => {}, 60_000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const first = await Promise.race([
      once(child.stdout!, 'data').then(() => 'ready'),
      once(child, 'exit').then(() => 'exited'),
    ]);
    assert.equal(first, 'ready', 'the child exited before it was ready');
    await sleep(500); // start-up's own work settles
    const before = wakeUps(child.pid!);
    await sleep(2_000);
    const perSecond = (wakeUps(child.pid!) - before) / 2;
    // prom-client's default 10 ms event-loop sampling wakes the process about 100 times a second;
    // EVENT_LOOP_SAMPLE_MS (100 ms) about 10.
    assert.ok(perSecond < 40, `${perSecond} wake-ups a second`);
  } finally {
    child.kill();
  }
});
