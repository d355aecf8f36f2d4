import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import type { Config } from './config.ts';

const TOKEN_FILE = 'admin-token';

/**
 * On a start that generated ADMIN_TOKEN (the embedded default), the token goes into the data folder,
 * readable by its owner only, so that `sealpost queue` and `sealpost rules` on the same machine can use it.
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

/**
 * The admin API of the running exchange (EXCHANGE_URL, admin token), as `sealpost rules` and `sealpost queue`
 * call it: the answer's JSON, or an Error naming the exchange and its error object's message.
 */
export async function exchangeAdmin<T>(config: Config, method: string, path: string, body?: unknown): Promise<T> {
  const url = config.auth.exchangeUrl;
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await adminToken(config)}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).catch((error: unknown) => {
    throw new Error(
      `the exchange at EXCHANGE_URL=${url} does not answer: ${(error as Error).cause ?? (error as Error).message}`,
    );
  });
  const text = await response.text();
  if (!response.ok) {
    let message = text.slice(0, 300);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {}
    throw new Error(`the exchange at ${url} answered ${response.status}: ${message}`);
  }
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A mistake in the command line: the command prints it with its usage and exits 2. */
export class UsageError extends Error {}

/**
 * Asks before a deletion, as `postsuper -d` users expect from a careful tool: yes only on `y` or `yes`.
 * `--yes` skips the question; without a terminal to ask on (a script, a pipe) and without `--yes` it
 * refuses, so that nothing is deleted by a command nobody saw.
 */
export async function confirm(
  question: string,
  options: { yes: boolean; input?: NodeJS.ReadableStream & { isTTY?: boolean }; output?: NodeJS.WritableStream },
): Promise<boolean> {
  if (options.yes) return true;
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stderr;
  if (!input.isTTY)
    throw new UsageError(`${question} Not asked: standard input is not a terminal; add --yes to go ahead`);
  const prompt = createInterface({ input, output });
  try {
    return /^(y|yes)$/i.test((await prompt.question(`${question} [y/N] `)).trim());
  } finally {
    prompt.close();
  }
}

/** parseArgs, strict and with positionals: an unknown flag is a UsageError naming it. */
export function strictArgs<T extends NonNullable<Parameters<typeof parseArgs>[0]>['options']>(
  args: string[],
  options: T,
) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
