import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SEALPOST_BIN } from './sealpost-process.ts';

const run = promisify(execFile);

/**
 * Writes a DKIM key with `sealpost dkim-key generate` into `dir` and returns its file and the TXT record the
 * command prints for `<selector>._domainkey.<domain>`, its quoted strings joined, as a resolver returns it.
 */
export async function generateDkimKey(
  dir: string,
  domain: string,
  selector: string,
  type: 'rsa' | 'ed25519',
): Promise<{ file: string; record: string }> {
  const file = join(dir, `${selector}.pem`);
  const { stdout } = await run(process.execPath, [
    SEALPOST_BIN,
    'dkim-key',
    'generate',
    '--domain',
    domain,
    '--selector',
    selector,
    '--type',
    type,
    '--out',
    file,
  ]);
  const line = stdout.split('\n').find((l) => l.startsWith(`${selector}._domainkey.${domain}. IN TXT `));
  assert.ok(line, stdout);
  const record = [...line.matchAll(/"([^"]*)"/g)].map((m) => m[1]).join('');
  assert.match(record, new RegExp(`^v=DKIM1; k=${type}; p=`));
  return { file, record };
}
