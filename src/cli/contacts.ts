import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Config } from './config.ts';
import { adminToken } from './admin-client.ts';

/**
 * `sealpost contacts import FILE.csv [--all-or-nothing]` and `sealpost contacts show EMAIL`: the seal
 * service's contacts directory (docs/operating.md#contacts-and-a-crm), through its admin API at SEAL_URL. The
 * file is streamed, so its size does not matter here or at the service.
 */

interface ImportAnswer {
  imported: number;
  refusedCount: number;
  refused: Array<{ line: number; email?: string; reason: string }>;
}

interface ErrorAnswer {
  message?: string;
  refused?: ImportAnswer['refused'];
  refusedCount?: number;
}

function unreachable(config: Config, error: unknown): Error {
  return new Error(
    `the seal service at SEAL_URL=${config.exchange.sealUrl} does not answer: ` +
      `${(error as Error).cause ?? (error as Error).message}`,
  );
}

function refusedLines(refused: ImportAnswer['refused'], count: number): string[] {
  const lines = refused.map((row) => `  line ${row.line}${row.email ? ` (${row.email})` : ''}: ${row.reason}`);
  if (count > refused.length) lines.push(`  ... and ${count - refused.length} more`);
  return lines;
}

export async function contactsCommand(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const [action, target, ...flags] = args;
  const token = await adminToken(config);
  if (action === 'import' && target !== undefined) {
    const allOrNothing = flags.includes('--all-or-nothing');
    const unknown = flags.filter((flag) => flag !== '--all-or-nothing' && flag !== '--json');
    if (unknown.length > 0) throw new Error(`unknown option ${unknown[0]}`);
    await stat(target).catch(() => {
      throw new Error(`${target} cannot be read`);
    });
    const response = await fetch(
      `${config.exchange.sealUrl}/v1/admin/contacts${allOrNothing ? '?allOrNothing=true' : ''}`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
        body: Readable.toWeb(createReadStream(target)) as unknown as RequestInit['body'],
        duplex: 'half',
      } as RequestInit,
    ).catch((error: unknown) => {
      throw unreachable(config, error);
    });
    const answer = (await response.json().catch(() => ({}))) as ImportAnswer & ErrorAnswer;
    if (flags.includes('--json')) out.write(`${JSON.stringify(answer, null, 2)}\n`);
    else if (response.ok) {
      out.write(
        [
          `${answer.imported} contact${answer.imported === 1 ? '' : 's'} imported, ${answer.refusedCount} refused`,
          ...refusedLines(answer.refused, answer.refusedCount),
          '',
        ].join('\n'),
      );
    } else {
      out.write(
        [
          `Nothing imported: ${answer.message ?? response.statusText}`,
          ...refusedLines(answer.refused ?? [], answer.refusedCount ?? 0),
          '',
        ].join('\n'),
      );
    }
    return response.ok && answer.refusedCount === 0 ? 0 : 1;
  }
  if (action === 'show' && target !== undefined) {
    const response = await fetch(`${config.exchange.sealUrl}/v1/admin/contacts/${encodeURIComponent(target)}`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch((error: unknown) => {
      throw unreachable(config, error);
    });
    const answer = (await response.json().catch(() => ({}))) as Record<string, unknown> & ErrorAnswer;
    if (response.status === 404) {
      out.write(`${target}: not in the directory, and no number confirmed\n`);
      return 1;
    }
    if (!response.ok) throw new Error(answer.message ?? `the seal service answered ${response.status}`);
    if (flags.includes('--json')) {
      out.write(`${JSON.stringify(answer, null, 2)}\n`);
      return 0;
    }
    const confirmed = answer.confirmed as { mobile: string; confirmedAt: string } | undefined;
    const language = answer.language ? `, language ${answer.language}` : '';
    out.write(
      [
        `${answer.email}`,
        `  directory: ${answer.mobile ? `${answer.mobile}${language} (updated ${answer.updatedAt})` : '-'}`,
        `  confirmed by the recipient: ${confirmed ? `${confirmed.mobile} (${confirmed.confirmedAt})` : '-'}`,
        `  a message without a header number uses: ${answer.applies}`,
        '',
      ].join('\n'),
    );
    return 0;
  }
  throw new Error('usage: sealpost contacts import FILE.csv [--all-or-nothing] | contacts show EMAIL');
}
