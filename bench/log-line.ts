// The cost of a log line: Sealpost's logger (src/kernel/logger.ts, its redaction included) against a bare
// pino logger with the same options and no redaction, both writing the intake's line per accepted message
// into a destination that discards it (the write to stdout is the same for both, and not measured here).
// The two run in turns, each round the same number of lines; the figures are the medians over the rounds:
// CPU time per line, and V8's collections per 10,000 lines (what the garbage of a line costs later).
//
//   node --import tsx bench/log-line.ts [--lines 100000] [--rounds 5]
import { PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { createLogger } from '../src/kernel/logger.ts';
import { machineLine } from './support/proc.ts';
import { printResult } from './support/result.ts';
import { median } from './support/smtp-load.ts';

const { values } = parseArgs({
  options: { lines: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '5' } },
});
const LINES = Number(values.lines);
const ROUNDS = Number(values.rounds);

const discard = { write: (_line: string) => {} };
const loggers = {
  sealpost: createLogger({ level: 'info', name: 'sealpost' }, discard).child({ component: 'smtp' }),
  'bare pino': pino({ level: 'info', name: 'sealpost', base: { pid: process.pid } }, discard).child({
    component: 'smtp',
  }),
};

/** The intake's line for an accepted message (src/exchange/inbound/smtp-message.ts), with fresh fields. */
function logAccepted(logger: pino.Logger, i: number): void {
  logger.info(
    {
      envelopeId: `0b8a6a43-5f3e-4f7c-9a55-${String(i).padStart(12, '0')}`,
      sender: 'alice@example.com',
      recipients: 1,
      size: 10_321,
      outbound: ['smtp'],
      client: '127.0.0.1',
      tls: false,
      ms: i % 7,
    },
    'message accepted over SMTP',
  );
}

let collections = 0;
new PerformanceObserver((list) => {
  collections += list.getEntries().length;
}).observe({ entryTypes: ['gc'] });
/** Lets the observer see the collections of the lines just written (its entries arrive on a later turn). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

const figures = new Map<string, { us: number[]; gcs: number[] }>();
for (const [name, logger] of Object.entries(loggers)) {
  figures.set(name, { us: [], gcs: [] });
  for (let i = 0; i < LINES / 5; i++) logAccepted(logger, i); // warm-up: JIT
}
await settle();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, logger] of Object.entries(loggers)) {
    const gcsBefore = collections;
    const cpu = process.cpuUsage();
    for (let i = 0; i < LINES; i++) logAccepted(logger, i);
    const { user, system } = process.cpuUsage(cpu);
    await settle();
    const figure = figures.get(name)!;
    figure.us.push((user + system) / LINES);
    figure.gcs.push(((collections - gcsBefore) * 10_000) / LINES);
  }
}

console.log(`== a log line: ${LINES} lines a round, ${ROUNDS} rounds in turns (medians)`);
console.log(`   ${machineLine()}`);
const bare = figures.get('bare pino')!;
for (const [name, figure] of figures) {
  const us = median(figure.us);
  const ratio = (us / median(bare.us)).toFixed(2);
  const gcs = median(figure.gcs).toFixed(1).padStart(5);
  const cpu = `${us.toFixed(2).padStart(6)} µs CPU per line (${ratio}× bare pino)`;
  console.log(`${name.padEnd(10)} ${cpu}  ${gcs} collections per 10,000 lines`);
}
// No goal: a figure kept beside the goals' table.
const ours = figures.get('sealpost')!;
printResult({
  goal: "a log line (the intake's)",
  unit: 'µs CPU',
  figure: median(ours.us),
  baseline: median(bare.us),
  baselineName: 'bare pino',
  ratio: median(ours.us) / median(bare.us),
  note: `${median(ours.gcs).toFixed(1)} collections per 10,000 lines`,
});
