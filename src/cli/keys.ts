import type { Config } from './config.ts';
import { adminToken } from './admin-client.ts';

/** GET /v1/admin/keys as the seal service answers it (src/seal/keys/routes.ts); the CLI keeps its own copy. */
export interface KeyStatus {
  current: number;
  versions: Array<{
    version: number;
    configured: boolean;
    source: string | null;
    variable: string | null;
    messages: number;
    clusterPasswords: number;
    removable: boolean;
  }>;
  rotation: {
    version: number;
    state: 'running' | 'finished';
    requestedAt: string;
    finishedAt: string | null;
    rewrapped: number;
  } | null;
}

/** What each version may do next, in the operator's words. */
function verdict(status: KeyStatus, entry: KeyStatus['versions'][number]): string {
  const where = entry.variable ?? 'its variable';
  if (!entry.configured) return 'NOT CONFIGURED on this instance: give it again';
  if (entry.version === status.current) return 'current: wraps new keys';
  if (entry.removable) return `wraps nothing: may be removed from ${where}`;
  return `still wraps ${entry.messages + entry.clusterPasswords}: keep it in ${where} (\`sealpost keys rotate\`)`;
}

export function formatKeyStatus(status: KeyStatus): string {
  const rows = [
    ['version', 'held in', 'message keys', 'cluster passwords', ''],
    ...status.versions.map((entry) => [
      String(entry.version),
      entry.source ?? '-',
      String(entry.messages),
      String(entry.clusterPasswords),
      verdict(status, entry),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines = rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd(),
  );
  const { rotation } = status;
  lines.push('');
  if (!rotation) lines.push('no rotation asked for yet');
  else if (rotation.state === 'running') {
    lines.push(
      `rotation to version ${rotation.version}: running since ${rotation.requestedAt}, ` +
        `${rotation.rewrapped} re-wrapped so far`,
    );
  } else {
    lines.push(
      `rotation to version ${rotation.version}: finished ${rotation.finishedAt}, ${rotation.rewrapped} re-wrapped`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * `sealpost keys status` and `sealpost keys rotate`: asked of the running seal service (SEAL_URL), which holds the
 * keys. `rotate` opens a rotation to the current version and returns: the re-wrap runs in the background.
 */
export async function keysCommand(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const [action, ...flags] = args;
  const json = flags.includes('--json');
  const unknown = flags.filter((flag) => flag !== '--json');
  if ((action !== 'status' && action !== 'rotate') || unknown.length > 0) {
    throw new Error('expected `keys status [--json]` or `keys rotate [--json]`');
  }
  const url = config.auth.sealUrl;
  const response = await fetch(`${url}/v1/admin/keys${action === 'rotate' ? '/rotate' : ''}`, {
    method: action === 'rotate' ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${await adminToken(config)}` },
  }).catch((error: unknown) => {
    throw new Error(
      `the seal service at SEAL_URL=${url} does not answer: ${(error as Error).cause ?? (error as Error).message}`,
    );
  });
  if (!response.ok) {
    const text = await response.text();
    let message = text.slice(0, 300);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {}
    throw new Error(`the seal service at ${url} answered ${response.status}: ${message}`);
  }
  const status = (await response.json()) as KeyStatus;
  if (json) {
    out.write(`${JSON.stringify(status, null, 2)}\n`);
    return 0;
  }
  if (action === 'rotate') {
    out.write(
      `rotation to version ${status.current} asked for: every message key and cluster password another version ` +
        'wraps is re-wrapped in the background (SEAL_KEY_REWRAP_RATE); follow it with `sealpost keys status` or ' +
        'seal_key_rewrap_remaining on /metrics. A version may leave the configuration once it wraps nothing.\n\n',
    );
  }
  out.write(formatKeyStatus(status));
  return 0;
}
