// A contacts directory import (docs/design.md#contacts): a CSV of 100,000 contacts, generated as it is sent,
// streamed in one request to the seal service's POST /v1/admin/contacts, on `sealpost start all` with PostgreSQL.
// Figures: the time of the request (rows per second), and the process's RSS before and at its peak during the
// import (VmHWM, reset before the import where /proc allows it, else sampled every 50 ms): the import must hold one
// batch of rows (1,000), not the file.
//
//   node --import tsx bench/contacts.ts [--rows 100000]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { createTestDatabase } from '../test/support/postgres.ts';
import { startSealpostProcess } from '../test/support/sealpost-process.ts';
import { stopOnExit } from './support/cleanup.ts';
import { loadAverage, machineLine, peakRssMb, resetPeakRss, rssMb } from './support/proc.ts';
import { printResult } from './support/result.ts';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '100000' } } });
const ROWS = Number(values.rows);
const ADMIN = 'bench-contacts-admin-token';

/** `email,mobile,language` and ROWS contacts, made as the request body is read (nothing held whole here either). */
function csvBody(rows: number): Readable {
  const LANGUAGES = ['en', 'de', 'fr', 'it'];
  let i = 0;
  return Readable.from(
    (function* () {
      yield 'email,mobile,language\n';
      while (i < rows) {
        const lines: string[] = [];
        for (let n = 0; n < 1000 && i < rows; n++, i++) {
          const number = String(1_000_000 + i).slice(-7);
          lines.push(
            `contact${i}@customers.example,+41 79 ${number.slice(0, 3)} ${number.slice(3)},${LANGUAGES[i % 4]}`,
          );
        }
        yield `${lines.join('\n')}\n`;
      }
    })(),
  );
}

console.log('== Contacts import');
console.log(`   ${machineLine()}`);
console.log(`   load average at the start: ${loadAverage()}`);

const database = await createTestDatabase('bench_contacts');
const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-bench-contacts-'));
const sealpost = await startSealpostProcess(
  { SEALPOST_DATA_DIR: dataDir, DATABASE_URL: database.url, ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn' },
  { timeoutMs: 120_000 },
);
stopOnExit(sealpost.child);
const pid = sealpost.child.pid!;
try {
  const before = rssMb(pid);
  const reset = resetPeakRss(pid);
  let sampledPeak = before;
  const trace: number[] = [];
  let ticks = 0;
  const sampler = setInterval(() => {
    const now = rssMb(pid);
    sampledPeak = Math.max(sampledPeak, now);
    if (++ticks % 40 === 0) trace.push(Math.round(now));
  }, 50);
  const started = performance.now();
  const response = await fetch(`${sealpost.urls.seal}/v1/admin/contacts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
    body: Readable.toWeb(csvBody(ROWS)) as unknown as RequestInit['body'],
    duplex: 'half',
  } as RequestInit);
  const answer = (await response.json()) as { imported: number; refusedCount: number };
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const peak = reset ? peakRssMb(pid) : Math.max(sampledPeak, rssMb(pid));
  if (response.status !== 200 || answer.imported !== ROWS)
    throw new Error(`import answered ${response.status}: ${JSON.stringify(answer)}`);
  const count = await fetch(`${sealpost.urls.seal}/v1/admin/contacts/contact${ROWS - 1}@customers.example`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  if (count.status !== 200) throw new Error('the last contact is not in the directory');

  console.log(`   ${ROWS.toLocaleString('en')} contacts imported in ${seconds.toFixed(2)} s`);
  console.log(`   ${Math.round(ROWS / seconds).toLocaleString('en')} contacts/s`);
  console.log(
    `   RSS of sealpost (all three services): ${before.toFixed(0)} MB before, ${peak.toFixed(0)} MB at the peak ` +
      `(${reset ? 'VmHWM' : 'sampled every 50 ms'})`,
  );
  console.log(`   RSS every 2 s during the import (MB): ${trace.join(' ')}`);
  console.log(`   load average at the end: ${loadAverage()}`);
  printResult({
    goal: `contacts import, ${ROWS.toLocaleString('en')} rows CSV`,
    unit: 's',
    figure: Number(seconds.toFixed(2)),
    note: `${Math.round(ROWS / seconds)} rows/s; peak RSS ${peak.toFixed(0)} MB (${before.toFixed(0)} MB before)`,
  });
  printResult({
    goal: 'contacts import, peak RSS',
    unit: 'MB',
    figure: Number(peak.toFixed(0)),
    baseline: Number(before.toFixed(0)),
    baselineName: 'RSS before the import',
  });
} finally {
  await sealpost.stop();
  await rm(dataDir, { recursive: true, force: true });
  await database.drop();
}
