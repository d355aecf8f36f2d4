import type { Static } from 'typebox';
import { TRAIL_CSV_COLUMNS, type TrailEntrySchema } from '../../contracts/seal.ts';
import type { SealedTrailEntry } from '../tables.ts';

export function trailEntryView(entry: SealedTrailEntry): Static<typeof TrailEntrySchema> {
  return {
    at: entry.at.toISOString(),
    event: entry.event,
    ...(entry.recipient !== null ? { recipient: entry.recipient } : {}),
    ...(entry.client !== null ? { client: entry.client } : {}),
    ...(entry.detail !== null ? { detail: entry.detail } : {}),
  };
}

/** Whether the client asked for the CSV form (`Accept: text/csv`). */
export function wantsCsv(accept: string | undefined): boolean {
  return /(^|,)\s*text\/csv\s*(;|,|$)/i.test(accept ?? '');
}

/**
 * The trail as CSV (RFC 4180: CRLF, fields with a quote, comma or line break quoted, quotes doubled), under the
 * header row `at,event,recipient,client,detail`, `detail` as compact JSON. A cell starting with `=`, `+`, `-` or
 * `@` is prefixed with `'`, so that a spreadsheet shows it rather than run it as a formula (CSV injection: a
 * recipient address or an attachment name is the sender's or a stranger's text).
 */
export function trailCsv(entries: SealedTrailEntry[]): string {
  const rows = entries.map((entry) => [
    entry.at.toISOString(),
    entry.event,
    entry.recipient ?? '',
    entry.client ?? '',
    entry.detail !== null ? JSON.stringify(entry.detail) : '',
  ]);
  return [[...TRAIL_CSV_COLUMNS], ...rows].map((row) => `${row.map(csvCell).join(',')}\r\n`).join('');
}

function csvCell(value: string): string {
  const safe = /^[=+\-@]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
