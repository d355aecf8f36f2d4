import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import { LineTooLong, reencode, SevenBitImpossible } from './seven-bit.ts';

const crlf = (...lines: string[]) => Buffer.from(lines.join('\r\n'), 'utf8');
const longest = (message: Buffer) =>
  Math.max(
    ...message
      .toString('latin1')
      .split('\r\n')
      .map((l) => l.length),
  );
const forLongLines = (message: Buffer) => reencode(message, { eightBit: false });

describe('reencode: lines over 998 octets', () => {
  it('re-encodes a text part with a long line as quoted-printable, the text intact', async () => {
    const long = `${'word '.repeat(300)}${'x'.repeat(600)}`;
    const message = crlf('From: a@example.org', 'Subject: t', 'Content-Type: text/plain', '', 'short', long, 'end', '');
    const out = forLongLines(message);
    assert.ok(longest(out) <= 998);
    assert.match(out.toString(), /\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n/);
    assert.equal((await simpleParser(out)).text, `short\n${long}\nend\n`);
  });

  it('keeps a message without long lines, and parts without them, byte for byte', () => {
    const short = crlf('Subject: t', '', 'Grüße', 'y'.repeat(998), '');
    assert.ok(forLongLines(short).equals(short));
    const multipart = crlf(
      'Content-Type: multipart/mixed; boundary=b',
      '',
      'preamble',
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      'Grüße, kept 8-bit: the relay offers 8BITMIME',
      '--b',
      'Content-Type: text/plain',
      '',
      'z'.repeat(1200),
      '--b--',
      'epilogue',
      '',
    );
    const out = forLongLines(multipart).toString('utf8');
    assert.ok(out.startsWith(multipart.toString('utf8').split('--b\r\nContent-Type: text/plain\r\n\r\n')[0]!));
    assert.ok(out.includes('\r\nGrüße, kept 8-bit: the relay offers 8BITMIME\r\n--b\r\n'));
    assert.ok(out.endsWith('\r\n--b--\r\nepilogue\r\n'));
    assert.ok(longest(Buffer.from(out, 'utf8')) <= 998);
  });

  it('re-encodes an 8-bit part with a long line, though the relay takes 8-bit', async () => {
    const long = 'ü'.repeat(700);
    const message = crlf('Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', long, '');
    const out = forLongLines(message);
    assert.ok(!out.some((byte) => byte >= 0x80) && longest(out) <= 998);
    assert.equal((await simpleParser(out)).text, `${long}\n`);
  });

  it('wraps again a base64 or quoted-printable part written as one long line, the content unchanged', async () => {
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 13) % 256));
    const base64 = crlf(
      'Content-Type: multipart/mixed; boundary=b',
      '',
      '--b',
      'Content-Type: application/octet-stream',
      'Content-Transfer-Encoding: base64',
      '',
      bytes.toString('base64'),
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      // =XX escapes at every position a cut could fall on.
      `${'=C3=BC'.repeat(250)}a${'=C3=A4'.repeat(250)}ab${'=C3=B6'.repeat(250)}`,
      '--b--',
      '',
    );
    const out = forLongLines(base64);
    assert.ok(longest(out) <= 76, `lines of at most 76 characters, not ${longest(out)}`);
    const parsed = await simpleParser(out);
    assert.ok(parsed.attachments[0]!.content.equals(bytes));
    assert.equal(parsed.text, `${'ü'.repeat(250)}a${'ä'.repeat(250)}ab${'ö'.repeat(250)}`);
  });

  it('folds a long header line at whitespace, and refuses one that has none', async () => {
    const subject = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
    const out = forLongLines(crlf(`Subject: ${subject}`, `X-List: ${'a, '.repeat(400)}b`, '', 'body', ''));
    assert.ok(longest(out) <= 998);
    assert.equal((await simpleParser(out)).subject, subject);
    assert.ok(out.toString().endsWith('\r\n\r\nbody\r\n'));
    assert.throws(
      () => forLongLines(crlf(`DKIM-Signature: b=${'A'.repeat(1200)}`, '', 'body', '')),
      (error: unknown) => error instanceof LineTooLong && /DKIM-Signature/.test(error.message),
    );
  });

  it('walks into a message/rfc822 part; refuses a long line in another message/* part', async () => {
    const inner = crlf('Subject: inner', 'Content-Type: text/plain', '', 'q'.repeat(1500), '');
    const out = forLongLines(Buffer.concat([crlf('Subject: outer', 'Content-Type: message/rfc822', '', ''), inner]));
    assert.ok(longest(out) <= 998);
    assert.match(out.toString(), /^Subject: outer\r\nContent-Type: message\/rfc822\r\n\r\nSubject: inner\r\n/);
    assert.equal((await simpleParser(out.subarray(out.indexOf('Subject: inner')))).text, `${'q'.repeat(1500)}\n`);
    assert.throws(
      () => forLongLines(crlf('Content-Type: message/delivery-status', '', `X-Long: ${'d'.repeat(1200)}`, '')),
      LineTooLong,
    );
  });

  it('still refuses for a relay without 8BITMIME what no encoding can carry', () => {
    assert.throws(() => reencode(crlf('Subject: Grüße', '', 'x', ''), { eightBit: true }), SevenBitImpossible);
    // Without the need to go 7-bit, an 8-bit header is left to the relay (SMTPUTF8 is checked elsewhere).
    const utf8Header = crlf('Subject: Grüße', '', 'x'.repeat(1000), '');
    assert.ok(longest(forLongLines(utf8Header)) <= 998);
  });
});
