import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { AppError } from '../../kernel/errors.ts';
import { contactEntry } from './contact-row.ts';
import { csvRows, type ImportRow } from './import.ts';

/** A directory row checked as the intake checks a recipient, and a CSV file read row by row with its lines. */

const rows = async (text: string) => {
  const found: ImportRow[] = [];
  for await (const row of csvRows(Readable.from([Buffer.from(text)]))) found.push(row);
  return found;
};

describe('a contacts row', () => {
  it('normalises the address, the number to E.164 and the language tag', () => {
    assert.deepEqual(
      contactEntry({ email: ' Alice@EXAMPLE.com ', mobile: '0041 (79) 123-45.67', language: 'de-CH' }, 2),
      {
        email: 'Alice@example.com',
        emailKey: 'alice@example.com',
        mobile: '+41791234567',
        language: 'de',
      },
    );
    assert.equal(
      contactEntry({ email: 'bob@bücher.example', mobile: '+1 201 555 0123' }, 3).email,
      'bob@xn--bcher-kva.example',
    );
  });

  it('refuses, with its line, a missing or bad address, a national or invalid number, an unknown language', () => {
    const reasons = [
      contactEntry({ mobile: '+41791234567' }, 2),
      contactEntry({ email: 'not an address', mobile: '+41791234567' }, 3),
      contactEntry({ email: 'a@example.com', mobile: '079 123 45 67' }, 4),
      contactEntry({ email: 'a@example.com', mobile: '+41 12' }, 5),
      contactEntry({ email: 'a@example.com', mobile: '' }, 6),
      contactEntry({ email: 'a@example.com', mobile: '+41791234567', language: 'es' }, 7),
    ].map((entry) => ('reason' in entry ? `${entry.line}: ${entry.reason}` : 'kept'));
    assert.deepEqual(reasons, [
      '2: email is missing',
      '3: email "not an address" is not a valid address',
      '4: mobile "079 123 45 67" is not a valid number in international form (+41 79 123 45 67)',
      '5: mobile "+41 12" is not a valid number in international form (+41 79 123 45 67)',
      '6: mobile is missing',
      '7: language "es" is not one of en, de, fr, it',
    ]);
  });
});

describe('a contacts CSV file', () => {
  it('names its columns in its header (any order and case, a BOM, CRLF), numbering rows by their line', async () => {
    const found = await rows(
      '\uFEFFMobile,CRM id,EMAIL\r\n+41791234567,17,a@example.com\r\n\r\n"+41 79 123 45 68",18,b@example.com\r\n',
    );
    assert.deepEqual(
      found.map((row) => [row.line, row.fields.email, row.fields.mobile]),
      [
        [2, 'a@example.com', '+41791234567'],
        [4, 'b@example.com', '+41 79 123 45 68'],
      ],
    );
  });

  it('is refused with a 400 naming the missing column, or the line that is not CSV', async () => {
    await assert.rejects(rows('email,phone\na@example.com,+41791234567\n'), (error: AppError) => {
      assert.equal(error.status, 400);
      assert.match(error.message, /names no mobile column/);
      return true;
    });
    await assert.rejects(rows('email,mobile\n"a@example.com,+41791234567\n'), (error: AppError) => {
      assert.equal(error.status, 400);
      assert.match(error.message, /not valid CSV/);
      return true;
    });
  });
});
