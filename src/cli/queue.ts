import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { QueuedEnvelope, QueueSummary } from '../exchange/queue/view.ts';
import type { Config } from './config.ts';

/**
 * `sealpost queue` (Postfix's mailq): the envelopes waiting in the exchange, by status and age, with the
 * last error of each retrying one. It asks the running exchange (GET /v1/admin/queue at EXCHANGE_URL),
 * so it also works on the embedded default, whose database only the running process can open.
 */

const TOKEN_FILE = 'admin-token';

/**
 * On a start that generated ADMIN_TOKEN (the embedded default), the token goes into the data folder,
 * readable by its owner only, so that `sealpost queue` on the same machine can use it.
 */
export async function keepGeneratedAdminToken(config: Config): Promise<void> {
  if (!config.generatedTokens.includes('ADMIN_TOKEN')) return;
  const file = join(resolve(config.dataDir), TOKEN_FILE);
  await mkdir(resolve(config.dataDir), { recursive: true });
  await writeFile(file, `${config.adminToken}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
}

/** ADMIN_TOKEN, or the one the embedded default generated and kept in the data folder. */
export async function adminToken(config: Config): Promise<string> {
  if (!config.generatedTokens.includes('ADMIN_TOKEN')) return config.adminToken;
  const file = join(resolve(config.dataDir), TOKEN_FILE);
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new Error(`ADMIN_TOKEN is not set and ${file} does not exist: set ADMIN_TOKEN to the exchange's admin token`);
  }
}

interface QueueAnswer {
  summary: QueueSummary[];
  envelopes: QueuedEnvelope[];
}

/** `1h02m`, `4m05s`, `12s`: ages as an operator reads them. */
function age(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${String(Math.floor((s % 86400) / 3600)).padStart(2, '0')}h`;
}

export function formatQueue(answer: QueueAnswer): string {
  const lines: string[] = [];
  if (answer.envelopes.length === 0 && answer.summary.every((row) => row.count === 0)) return 'Mail queue is empty\n';
  for (const envelope of answer.envelopes) {
    lines.push(
      `${envelope.id}  ${envelope.status.padEnd(10)} ${age(envelope.ageSeconds).padStart(7)}  ` +
        `${String(envelope.size).padStart(9)} bytes  attempts ${envelope.attempts}  <${envelope.sender}>`,
    );
    for (const recipient of envelope.recipients) lines.push(`    ${recipient}`);
    if (envelope.status === 'retrying')
      lines.push(`    next attempt ${envelope.nextAttemptAt}: ${envelope.lastError ?? '(no error recorded)'}`);
  }
  const total = answer.summary.reduce((sum, row) => sum + row.count, 0);
  const byStatus = answer.summary.map((row) => `${row.count} ${row.status} (oldest ${age(row.oldestAgeSeconds)})`);
  lines.push('', `-- ${total} envelope${total === 1 ? '' : 's'}: ${byStatus.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

export async function queueCommand(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const limit = args.find((arg) => arg.startsWith('--limit='))?.slice('--limit='.length) ?? '1000';
  const response = await fetch(`${config.auth.exchangeUrl}/v1/admin/queue?limit=${encodeURIComponent(limit)}`, {
    headers: { authorization: `Bearer ${await adminToken(config)}` },
  }).catch((error: unknown) => {
    throw new Error(
      `the exchange at EXCHANGE_URL=${config.auth.exchangeUrl} does not answer: ` +
        `${(error as Error).cause ?? (error as Error).message}`,
    );
  });
  if (!response.ok)
    throw new Error(
      `the exchange at ${config.auth.exchangeUrl} answered ${response.status}: ` +
        (await response.text()).slice(0, 300),
    );
  const answer = (await response.json()) as QueueAnswer;
  out.write(args.includes('--json') ? `${JSON.stringify(answer, null, 2)}\n` : formatQueue(answer));
  return 0;
}
