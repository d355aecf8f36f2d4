// `npm run bench`: every benchmark in turn, each as its own process, its figures printed as they come;
// then the whole output, with the machine, the date and the load average, written into
// bench/RESULTS.md between the markers of the "Latest run" section (the rest of the file is kept).
//
//   npm run bench                      all of them
//   npm run bench -- ingest memory     some of them
//   npm run bench -- --no-write        leave RESULTS.md alone
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { swiftUnavailable } from '../test/support/s3-server.ts';
import { loadAverage, machineLine } from './support/proc.ts';

/**
 * The benchmarks, each `bench/<name>.ts` unless it names another script and its arguments. The ingest runs
 * twice: on local disk (the embedded default) and with payloads in S3, the path operators run, whose goals
 * are set against raw PutObject calls; the S3 one needs the real S3 server of the tests (OpenStack Swift,
 * which .ci/run installs) and says so when it is missing, rather than failing the whole run on a machine
 * that only ran `npm ci`.
 */
const BENCH_SCRIPTS: Record<string, { script?: string; args?: string[]; unavailable?: () => string | undefined }> = {
  ingest: {},
  'ingest-s3': { script: 'ingest', args: ['--s3'], unavailable: swiftUnavailable },
  delivery: {},
  auth: {},
  memory: {},
  seal: {},
  reader: {},
  'log-line': {},
};
const BENCHES = Object.keys(BENCH_SCRIPTS);
const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const BEGIN = '<!-- bench:latest-run -->';
const END = '<!-- /bench:latest-run -->';
/** The AWS SDK's notice that it will need Node 22 (printed by every process that loads it). */
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
const chosen = args.filter((arg) => !arg.startsWith('--'));
for (const name of chosen)
  if (!BENCHES.includes(name)) throw new Error(`unknown benchmark ${name}; known: ${BENCHES.join(', ')}`);
const selected = chosen.length > 0 ? BENCHES.filter((name) => chosen.includes(name)) : BENCHES;

function run(name: string): Promise<{ output: string; code: number | null; seconds: number }> {
  const { script = name, args = [] } = BENCH_SCRIPTS[name]!;
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL(`./${script}.ts`, import.meta.url)), ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
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

const header = `${machineLine()}`;
console.log(`Sealpost benchmarks: ${selected.join(', ')}\n${header}\n`);
const sections: string[] = [];
let failed = 0;
for (const name of selected) {
  const missing = BENCH_SCRIPTS[name]!.unavailable?.();
  if (missing) {
    console.log(`${name}: skipped, ${missing}\n`);
    sections.push(`### ${name} — skipped: ${missing}`);
    continue;
  }
  const { output, code, seconds } = await run(name);
  if (code !== 0) failed++;
  const status = code === 0 ? '' : ` (FAILED, exit ${code})`;
  sections.push(`### ${name}${status} — ${seconds.toFixed(0)} s\n\n\`\`\`\n${output.trimEnd()}\n\`\`\``);
  console.log('');
}
const footer = `load average at the end: ${loadAverage()}`;
console.log(footer);

if (write) {
  const block = [
    BEGIN,
    `Written by \`npm run bench\` (${selected.join(', ')}). ` +
      `Machine, date and load average at the start: ${header}; ${footer}.`,
    '',
    ...sections.flatMap((section) => [section, '']),
    END,
  ].join('\n');
  let text = '';
  try {
    text = readFileSync(RESULTS, 'utf8');
  } catch {
    text = `# Benchmark results\n\n## Latest run\n\n${BEGIN}\n${END}\n`;
  }
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  text =
    start >= 0 && end > start
      ? `${text.slice(0, start)}${block}${text.slice(end + END.length)}`
      : `${text.trimEnd()}\n\n## Latest run\n\n${block}\n`;
  writeFileSync(RESULTS, text);
  console.log(`figures written to ${RESULTS}`);
}
process.exitCode = failed > 0 ? 1 : 0;
