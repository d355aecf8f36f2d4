// `npm run bench`: every benchmark in turn, each as its own process, its figures printed as they come;
// then bench/RESULTS.md written whole from the RESULT lines they print (support/result.ts): one table of
// the goals of docs/design.md ("Performance goals"), each with its figure, baseline and floor from this
// run, with the date, the machine, Node's version and the commit. What was tried before is in bench/NOTES.md.
//
//   npm run bench                      all of them
//   npm run bench -- ingest memory     some of them (the goals of the others are marked as not run)
//   npm run bench -- --quick           every one at sizes too small to mean anything: a check of the scripts
//                                      and of this writer, not figures to compare
//   npm run bench -- --no-write        leave RESULTS.md alone
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { swiftUnavailable } from '../test/support/s3-server.ts';
import { loadAverage } from './support/proc.ts';
import { parseResults, type Result } from './support/result.ts';

interface Bench {
  /** `bench/<script>.ts`, the bench's name unless given. */
  script?: string;
  args?: string[];
  /** The arguments of a --quick run. */
  quick: string[];
  /** The goals (docs/design.md) whose RESULT lines it prints, in the table's order, with their targets. */
  goals: Array<[goal: string, target: string]>;
  unavailable?: () => string | undefined;
}

const LEVELS = [1, 8, 32];
const ingestGoals = (store: string): Bench['goals'] =>
  LEVELS.map((n) => [`ingest, ${store}, ${n} connection${n === 1 ? '' : 's'}`, '≥ 0.9× the floor']);
const INGEST_QUICK = ['--messages', '60', '--warm-up', '20', '--connections', '1'];

/**
 * The benchmarks and the goals each measures. The ingest runs twice: on local disk (the embedded default)
 * and with payloads in S3, the path operators run; the S3 one needs the real S3 server of the tests
 * (OpenStack Swift, which .ci/run installs) and says so when it is missing, rather than failing the whole
 * run on a machine that only ran `npm ci`. The ingest measures in turns (three rounds a level, the median
 * ratio), as the host's speed drifts within minutes.
 */
const BENCH_SCRIPTS: Record<string, Bench> = {
  ingest: { args: ['--rounds', '3'], quick: INGEST_QUICK, goals: ingestGoals('local disk') },
  'ingest-s3': {
    script: 'ingest',
    args: ['--s3', '--rounds', '3'],
    quick: ['--s3', ...INGEST_QUICK],
    goals: ingestGoals('S3'),
    unavailable: swiftUnavailable,
  },
  reader: {
    args: ['--small', '2000', '--large', '0'],
    quick: ['--small', '50', '--large', '0', '--round', '25'],
    goals: [['reader, GET /v1/message 100 KB', '≥ 0.9× the floor']],
  },
  seal: {
    args: ['--concurrency', '1,4,8'],
    quick: ['--messages', '8', '--concurrency', '1,4,8'],
    goals: [1, 4, 8].map((n) => [`seal, ${n} in flight`, '≥ 0.8× the ceiling']),
  },
  delivery: {
    quick: ['--messages', '300', '--warm-up', '100', '--engines', '1', '--latency-messages', '0'],
    goals: [['delivery, one engine', '≥ 1,500 msg/s']],
  },
  memory: {
    quick: ['--sessions', '100', '--upload-mib', '64'],
    goals: [
      ['memory, idle SMTP sessions, exchange RSS', '< 250 MB'],
      ['memory, upload, auth peak RSS', '< 150 MB'],
    ],
  },
  auth: { quick: ['--seconds', '1'], goals: [] },
  'log-line': { quick: ['--lines', '10000', '--rounds', '2'], goals: [] },
  contacts: { quick: ['--rows', '5000'], goals: [] },
};
const BENCHES = Object.keys(BENCH_SCRIPTS);
const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The AWS SDK's notice about Node versions (printed by every process that loads it on an older Node). */
const NOISE = [
  'NodeVersionSupportWarning',
  'versions published after',
  'will require node >=22',
  'To continue receiving updates',
  'and security updates please upgrade',
  'More information can be found at: https://a.co',
  'Use `node --trace-warnings',
];
const isNoise = (line: string) => NOISE.some((fragment) => line.includes(fragment));

const args = process.argv.slice(2);
const write = !args.includes('--no-write');
const quick = args.includes('--quick');
const chosen = args.filter((arg) => !arg.startsWith('--'));
for (const name of chosen)
  if (!BENCHES.includes(name)) throw new Error(`unknown benchmark ${name}; known: ${BENCHES.join(', ')}`);
const selected = chosen.length > 0 ? BENCHES.filter((name) => chosen.includes(name)) : BENCHES;

function run(name: string): Promise<{ output: string; code: number | null; seconds: number }> {
  const bench = BENCH_SCRIPTS[name]!;
  const script = bench.script ?? name;
  const scriptArgs = quick ? bench.quick : (bench.args ?? []);
  return new Promise((resolve) => {
    const started = Date.now();
    const path = fileURLToPath(new URL(`./${script}.ts`, import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', path, ...scriptArgs], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let partial = '';
    const take = (chunk: Buffer) => {
      partial += chunk.toString();
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (isNoise(line)) continue;
        output += `${line}\n`;
        process.stdout.write(`${line}\n`);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => {
      if (partial && !isNoise(partial)) output += `${partial}\n`;
      resolve({ output, code, seconds: (Date.now() - started) / 1000 });
    });
  });
}

/** `git` in the repository, its output trimmed; empty when git is missing or fails. */
function git(...gitArgs: string[]): string {
  try {
    return execFileSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

function osName(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? process.platform;
  } catch {
    return process.platform;
  }
}

const started = new Date();
const loadAtStart = loadAverage();
const model = cpus()[0]?.model.replace(/\s+/g, ' ').trim() ?? 'unknown CPU';
const machine = `${cpus().length} cores (${model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${osName()}`;
const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
const commit = `${git('rev-parse', '--short', 'HEAD') || 'unknown'}${dirty ? ' with local changes' : ''}`;
console.log(`Sealpost benchmarks: ${selected.join(', ')}${quick ? ' (quick)' : ''}`);
console.log(`${machine}, Node ${process.version}, commit ${commit}, load average ${loadAtStart}\n`);

/** Per bench: whether it ran, and how. */
const runs: Array<{ name: string; status: string }> = [];
const results: Result[] = [];
let failed = 0;
for (const name of selected) {
  const missing = BENCH_SCRIPTS[name]!.unavailable?.();
  if (missing) {
    console.log(`${name}: skipped, ${missing}\n`);
    runs.push({ name, status: `skipped: ${missing}` });
    continue;
  }
  const { output, code, seconds } = await run(name);
  if (code !== 0) failed++;
  results.push(...parseResults(output));
  runs.push({ name, status: `${code === 0 ? '' : `FAILED (exit ${code}), `}${(seconds / 60).toFixed(1)} min` });
  console.log('');
}
const minutes = (Date.now() - started.getTime()) / 60_000;
const loadAtEnd = loadAverage();
console.log(`load average at the end: ${loadAtEnd}; ${minutes.toFixed(1)} minutes in all`);

/** A figure as the table shows it: three significant digits at most, thousands separated. */
function figure(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '—';
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return value.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
const ratio = (value: number | undefined) => (value === undefined ? '—' : `${value.toFixed(2)}×`);
const row = (cells: string[]) => `| ${cells.join(' | ')} |`;

function goalRows(): { rows: string[]; notes: string[]; met: number; total: number } {
  const rows: string[] = [];
  const notes: string[] = [];
  let met = 0;
  let total = 0;
  for (const [name, bench] of Object.entries(BENCH_SCRIPTS)) {
    for (const [goal, target] of bench.goals) {
      total++;
      const result = results.find((r) => r.goal === goal);
      if (!result) {
        const status = runs.find((r) => r.name === name)?.status;
        const why = status === undefined ? 'not run' : (/^(skipped|FAILED)/.exec(status)?.[0] ?? 'not measured');
        rows.push(row([goal, target, '—', '—', '—', '—', why]));
        continue;
      }
      if (result.met) met++;
      rows.push(
        row([
          goal,
          target,
          `${figure(result.figure)} ${result.unit}`,
          figure(result.baseline),
          figure(result.floor),
          ratio(result.ratio),
          result.met ? '**yes**' : 'no',
        ]),
      );
      if (result.note) notes.push(`- ${goal}: ${result.note}`);
    }
  }
  return { rows, notes, met, total };
}

function otherRows(): string[] {
  const goals = new Set(Object.values(BENCH_SCRIPTS).flatMap((bench) => bench.goals.map(([goal]) => goal)));
  return results
    .filter((r) => !goals.has(r.goal))
    .map((r) =>
      row([
        r.goal,
        `${figure(r.figure)} ${r.unit}`,
        r.baseline === undefined ? '—' : `${figure(r.baseline)} (${r.baselineName})`,
        ratio(r.ratio),
        r.note ?? '',
      ]),
    );
}

/** What each baseline and floor is, once (the table has only their figures). */
function legend(): string[] {
  const goals = new Set(Object.values(BENCH_SCRIPTS).flatMap((bench) => bench.goals.map(([goal]) => goal)));
  const seen = new Map<string, string>();
  for (const r of results.filter((result) => goals.has(result.goal))) {
    const group = r.goal.replace(/, [^,]*$/, '');
    const parts = [r.baselineName && `baseline ${r.baselineName}`, r.floorName && `floor ${r.floorName}`].filter(
      Boolean,
    );
    if (parts.length > 0 && !seen.has(group)) seen.set(group, `- ${group}: ${parts.join(', ')}`);
  }
  return [...seen.values()];
}

if (write) {
  const goals = goalRows();
  const others = otherRows();
  const text = [
    '# Benchmark results',
    '',
    'Written whole by `npm run bench` (bench/run-all.ts) from this run alone; not edited by hand. The goals are',
    'those of [docs/design.md](../docs/design.md#performance-goals); what was tried to reach them, and dropped, is in',
    '[NOTES.md](NOTES.md).',
    '',
    ...(quick
      ? ['**A quick run**: sizes too small for the figures to mean anything; a check of the scripts.', '']
      : []),
    `- date: ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${minutes.toFixed(0)} minutes in all`,
    `- machine: ${machine}`,
    `- Node ${process.version}; PostgreSQL on 127.0.0.1`,
    `- commit: ${commit}`,
    `- load average: ${loadAtStart} at the start, ${loadAtEnd} at the end`,
    `- benchmarks: ${runs.map((r) => `${r.name} (${r.status})`).join(', ')}`,
    '',
    `## Goals: ${goals.met} of ${goals.total} met`,
    '',
    row(['goal', 'target', 'figure', 'baseline', 'floor', 'ratio', 'met']),
    row(['---', '---', '---:', '---:', '---:', '---:', '---']),
    ...goals.rows,
    '',
    'The ratio is the one the target names: the figure over the floor, over the ceiling (seal); for the',
    "reader's p99, a latency, the floor's over the figure's, so that higher is better everywhere. Baselines and",
    'floors (same run, same machine):',
    '',
    ...legend(),
    ...(goals.notes.length > 0 ? ['', 'Beside the figures:', '', ...goals.notes] : []),
    ...(others.length > 0
      ? [
          '',
          '## Figures with no goal',
          '',
          row(['figure', 'value', 'baseline', 'ratio', 'note']),
          row(['---', '---:', '---', '---:', '---']),
          ...others,
        ]
      : []),
    '',
  ].join('\n');
  writeFileSync(RESULTS, text);
  console.log(`figures written to ${RESULTS}`);
}
process.exitCode = failed > 0 ? 1 : 0;
