import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { AppError, badRequest } from '../../kernel/errors.ts';
import { contactEntry, isRefused, type ContactEntry, type RefusedRow } from './contact-row.ts';
import type { ContactStore } from './contact-store.ts';

/** Entries written per statement: 1,000 rows of five columns stay far below PostgreSQL's 65,535 parameters. */
export const IMPORT_BATCH = 1000;
/** Refused rows listed in an answer; the count says how many there were in all. */
export const REFUSED_LISTED = 1000;
/** A CSV record longer than this is not a contact (and would otherwise be held whole while it is read). */
const MAX_RECORD_BYTES = 4096;

export interface ImportOutcome {
  imported: number;
  refused: RefusedRow[];
  refusedCount: number;
}

/** One row to check: the fields as given, and where it was (CSV line, or position in a JSON array from 1). */
export interface ImportRow {
  line: number;
  fields: { email?: unknown; mobile?: unknown; language?: unknown };
}

/**
 * Checks and upserts the rows of one import, in batches of IMPORT_BATCH within one transaction, so that memory
 * holds one batch whatever the size of the file (docs/design.md#contacts). A bad row is reported with its line and
 * the good ones are kept; with `allOrNothing` one bad row refuses the whole import (400, every bad row listed) and
 * nothing is written.
 */
export async function importContacts(
  store: ContactStore,
  rows: AsyncIterable<ImportRow>,
  options: { allOrNothing: boolean },
): Promise<ImportOutcome> {
  let refusedWhole = 0;
  const outcome = await store
    .transaction(async (trx) => {
      const result: ImportOutcome = { imported: 0, refused: [], refusedCount: 0 };
      let batch: ContactEntry[] = [];
      const flush = async () => {
        // Once a row is refused under allOrNothing nothing will be kept: the rest is only checked.
        if (!(options.allOrNothing && result.refusedCount > 0)) await store.upsert(trx, batch);
        result.imported += batch.length;
        batch = [];
      };
      for await (const row of rows) {
        const entry = contactEntry(row.fields, row.line);
        if (isRefused(entry)) {
          result.refusedCount += 1;
          if (result.refused.length < REFUSED_LISTED) result.refused.push(entry);
          continue;
        }
        batch.push(entry);
        if (batch.length >= IMPORT_BATCH) await flush();
      }
      await flush();
      if (options.allOrNothing && result.refusedCount > 0) {
        refusedWhole = result.imported + result.refusedCount;
        throw new AppError(
          'validation_failed',
          400,
          `${result.refusedCount} of ${result.imported + result.refusedCount} contacts are not valid ` +
            `(first: line ${result.refused[0]!.line}, ${result.refused[0]!.reason}); nothing was imported`,
          { details: { refused: result.refused, refusedCount: result.refusedCount } },
        );
      }
      return result;
    })
    .catch((error: unknown) => {
      if (refusedWhole > 0) store.importedRows.inc({ result: 'refused' }, refusedWhole);
      throw error;
    });
  store.importedRows.inc({ result: 'written' }, outcome.imported);
  store.importedRows.inc({ result: 'refused' }, outcome.refusedCount);
  return outcome;
}

/** The rows of a JSON array of contacts, numbered from 1. */
export async function* jsonRows(contacts: ImportRow['fields'][]): AsyncGenerator<ImportRow> {
  let line = 0;
  for (const fields of contacts) yield { line: ++line, fields };
}

/**
 * The rows of a CSV file as it streams in: a header line naming the columns `email`, `mobile` and, optionally,
 * `language` (any order, any case; other columns are ignored), then one contact per line. Empty lines are skipped.
 * A file that is not CSV (an unclosed quote, a record over 4 KiB) is a 400 naming the line.
 */
export async function* csvRows(source: Readable): AsyncGenerator<ImportRow> {
  const parser = source.pipe(
    parse({
      bom: true,
      trim: true,
      skip_empty_lines: true,
      relax_column_count: true,
      max_record_size: MAX_RECORD_BYTES,
      info: true,
      columns: (header: string[]) => {
        const names = header.map((name) => name.trim().toLowerCase());
        for (const required of ['email', 'mobile']) {
          if (!names.includes(required)) {
            const found = names.map((name) => JSON.stringify(name)).join(', ');
            throw badRequest(
              `The CSV header line names no ${required} column (it has ${found}); ` +
                'the columns are email, mobile and, optionally, language',
            );
          }
        }
        return names;
      },
    }),
  );
  source.on('error', (error) => parser.destroy(error));
  try {
    for await (const { record, info } of parser as AsyncIterable<{
      record: Record<string, string>;
      info: { lines: number };
    }>) {
      yield { line: info.lines, fields: record };
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw badRequest(`The contacts file is not valid CSV: ${message}`);
  }
}
