import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import { headerBlockOf, readHeaderBlock } from '../outbound/header-block.ts';
import { toSevenBit } from '../outbound/seven-bit.ts';
import { bounceRefusal, composeBounce, isNotice, reportParameters } from './bounce.ts';

const headers = Buffer.from(
  'From: Alice <alice@sender.example>\r\nSubject: Greetings\r\nMessage-ID: <m1@sender.example>\r\n',
);
const utf8Headers = Buffer.from(
  'From: Alice <alice@sender.example>\r\nTo: jörg@rcpt.example\r\nSubject: Grüße\r\n' +
    'Message-ID: <m2@sender.example>\r\n',
);
const envelope = {
  id: '6f1c4b0e-0000-4000-8000-000000000001',
  sender: 'alice@sender.example',
  created_at: new Date('2026-11-20T10:00:00Z'),
};
const base = { reportingMta: 'mx.sealpost.test', from: 'Sealpost <notify@sealpost.test>', envelope };

/** The parts of a one-level multipart, split at its boundary lines (the preamble left out). */
const partsOf = (raw: Buffer) =>
  raw
    .toString('utf8')
    .split(/\r\n--[^\r\n]+\r\n/)
    .slice(1)
    .map((part) => part.replace(/\r\n--[^\r\n]+--\r\n$/, ''))
    .filter((part) => part.trim() !== '');
const typeOf = (part: string) => /^Content-Type: ([^;\r\n]+)/.exec(part)?.[1];

describe('bounces (RFC 3464, RFC 6533)', () => {
  it('builds a 7-bit multipart/report with the human part, the delivery status and the original headers', async () => {
    const raw = await composeBounce({
      ...base,
      report: {
        reason: 'The relay refused the message.',
        recipients: [
          {
            recipient: 'bob@rcpt.example',
            status: '5.1.1',
            diagnostic: 'smtp; 550 5.1.1 no such user',
            remoteMta: 'dns; relay.example',
          },
          { recipient: 'cy@rcpt.example', status: '4.4.7' },
        ],
      },
      originalHeaders: headers,
    });
    const mail = await simpleParser(raw);
    const type = mail.headers.get('content-type') as { value: string; params: Record<string, string> };
    assert.equal(type.value, 'multipart/report');
    assert.equal(type.params['report-type'], 'delivery-status');
    assert.equal(mail.subject, 'Undelivered Mail Returned to Sender');
    assert.equal(mail.inReplyTo, '<m1@sender.example>');
    const parts = partsOf(raw);
    assert.deepEqual(parts.map(typeOf), ['text/plain', 'message/delivery-status', 'text/rfc822-headers']);
    assert.ok(!raw.some((byte) => byte >= 0x80), 'an ASCII failure makes a 7-bit report (RFC 3464 §2.1)');
    assert.deepEqual(reportParameters(raw, 'alice@sender.example'), { smtputf8: false, body8bitmime: false });
    assert.match(parts[1]!, /^Content-Type: message\/delivery-status\r\nContent-Transfer-Encoding: 7bit\r\n/);
    const perMessage = [
      'Reporting-MTA: dns; mx.sealpost.test',
      'X-Sealpost-Envelope-Id: 6f1c4b0e-0000-4000-8000-000000000001',
      'Arrival-Date: Fri, 20 Nov 2026 10:00:00 +0000',
    ].join('\r\n');
    assert.ok(parts[1]!.includes(`\r\n\r\n${perMessage}\r\n\r\n`), parts[1]);
    const perRecipient = [
      'Final-Recipient: rfc822; bob@rcpt.example',
      'Action: failed',
      'Status: 5.1.1',
      'Remote-MTA: dns; relay.example',
      'Diagnostic-Code: smtp; 550 5.1.1 no such user',
      '',
      'Final-Recipient: rfc822; cy@rcpt.example',
      'Action: failed',
      'Status: 4.4.7',
      '',
    ].join('\r\n');
    assert.ok(parts[1]!.includes(perRecipient), parts[1]);
    assert.match(mail.text ?? '', /<bob@rcpt\.example>: 550 5\.1\.1 no such user/);
    const returned = mail.attachments.find((a) => a.contentType === 'text/rfc822-headers');
    assert.ok(returned?.content.equals(headers), 'the original headers come back byte for byte');
  });

  it('makes a global report (RFC 6533) for a UTF-8 recipient, 8-bit headers as message/global-headers', async () => {
    const raw = await composeBounce({
      ...base,
      report: {
        reason: 'The relay refused the message.',
        recipients: [
          {
            recipient: 'jörg@rcpt.example',
            status: '5.1.1',
            diagnostic: 'smtp; 550 5.1.1 <jörg@rcpt.example> unknown',
          },
          { recipient: 'bob@rcpt.example', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 no such user' },
        ],
      },
      originalHeaders: utf8Headers,
    });
    const mail = await simpleParser(raw);
    const type = mail.headers.get('content-type') as { value: string; params: Record<string, string> };
    assert.equal(type.value, 'multipart/report');
    assert.equal(type.params['report-type'], 'global-delivery-status');
    const parts = partsOf(raw);
    assert.deepEqual(parts.map(typeOf), ['text/plain', 'message/global-delivery-status', 'message/global-headers']);
    assert.match(parts[1]!, /^Content-Type: message\/global-delivery-status\r\nContent-Transfer-Encoding: 8bit\r\n/);
    assert.ok(
      parts[1]!.includes('\r\nFinal-Recipient: utf-8; jörg@rcpt.example\r\nAction: failed\r\nStatus: 5.1.1\r\n'),
      parts[1],
    );
    assert.ok(parts[1]!.includes('\r\nDiagnostic-Code: smtp; 550 5.1.1 <jörg@rcpt.example> unknown\r\n'));
    assert.ok(parts[1]!.includes('\r\nFinal-Recipient: rfc822; bob@rcpt.example\r\n'), 'an ASCII one stays rfc822');
    assert.match(parts[2]!, /^Content-Type: message\/global-headers\r\nContent-Transfer-Encoding: 8bit\r\n\r\n/);
    assert.ok(Buffer.from(parts[2]!).includes(utf8Headers), 'the original headers byte for byte');
    assert.match(mail.text ?? '', /<jörg@rcpt\.example>: 550 5\.1\.1/, 'the human part names the address');
    assert.deepEqual(
      reportParameters(raw, 'alice@sender.example'),
      { smtputf8: false, body8bitmime: true },
      'UTF-8 only in the body: 8BITMIME, no SMTPUTF8',
    );
    assert.equal(reportParameters(raw, 'jörg@sender.example').smtputf8, true, 'a UTF-8 sender needs SMTPUTF8');

    // A relay without 8BITMIME: both global parts base64 (RFC 6533 §6), nothing quoted-printable in them.
    const seven = toSevenBit(raw);
    assert.ok(!seven.some((byte) => byte >= 0x80));
    const sevenParts = partsOf(seven);
    assert.deepEqual(sevenParts.map(typeOf), [
      'text/plain',
      'message/global-delivery-status',
      'message/global-headers',
    ]);
    for (const part of sevenParts.slice(1)) assert.match(part, /\r\nContent-Transfer-Encoding: base64\r\n\r\n/);
    const decoded = await simpleParser(seven);
    const returned = decoded.attachments.find((a) => a.contentType === 'message/global-headers');
    assert.ok(returned?.content.equals(utf8Headers), 'decoded, the headers are whole');
    const status = decoded.attachments.find((a) => a.contentType === 'message/global-delivery-status');
    assert.match(status!.content.toString('utf8'), /^Final-Recipient: utf-8; jörg@rcpt\.example\r$/m);
  });

  it('returns a header line over 998 octets base64, never broken inside the line', async () => {
    const long = Buffer.from(`Subject: ${'x'.repeat(1500)}\r\nFrom: alice@sender.example\r\n`);
    const raw = await composeBounce({
      ...base,
      report: { reason: 'Refused.', recipients: [{ recipient: 'bob@rcpt.example', status: '5.0.0' }] },
      originalHeaders: long,
    });
    const parts = partsOf(raw);
    assert.match(parts[2]!, /^Content-Type: text\/rfc822-headers\r\nContent-Transfer-Encoding: base64\r\n/);
    assert.ok(
      raw
        .toString()
        .split('\r\n')
        .every((line) => line.length <= 998),
    );
    const mail = await simpleParser(raw);
    assert.ok(mail.attachments.find((a) => a.contentType === 'text/rfc822-headers')?.content.equals(long));
  });

  it('writes a notice of an undeliverable bounce to the postmaster, marked as one', async () => {
    const bounceHeaders = Buffer.from('From: Sealpost <notify@sealpost.test>\r\nTo: alice@sender.example\r\n');
    const raw = await composeBounce({
      ...base,
      envelope: { ...envelope, sender: 'alice@sender.example' },
      report: {
        reason: 'The relay refused the message.',
        recipients: [{ recipient: 'alice@sender.example', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 gone' }],
      },
      originalHeaders: bounceHeaders,
      noticeTo: 'postmaster@sealpost.test',
    });
    const mail = await simpleParser(raw);
    assert.equal(mail.to && !Array.isArray(mail.to) ? mail.to.text : '', 'postmaster@sealpost.test');
    assert.match(mail.text ?? '', /A delivery report from this system to <alice@sender\.example> could not be/);
    assert.ok(isNotice(headerBlockOf(raw)));
    assert.ok(!isNotice(bounceHeaders));
    assert.ok(partsOf(raw)[2]!.endsWith(bounceHeaders.toString()), 'the headers of the bounce that failed');
  });

  it('refuses to bounce to the null sender, a bounce of ours, or somebody else’s delivery report', () => {
    const normal = { sender: 'alice@sender.example', is_bounce: false };
    assert.equal(bounceRefusal(normal, headers), undefined);
    assert.match(bounceRefusal({ ...normal, sender: '' }, headers)!, /null sender/);
    assert.match(bounceRefusal({ ...normal, is_bounce: true }, headers)!, /itself a bounce/);
    const dsn = Buffer.from(
      'From: MAILER-DAEMON@x.example\r\n' +
        'Content-Type: multipart/report;\r\n\treport-type="delivery-status"; boundary="b"\r\n',
    );
    assert.match(bounceRefusal(normal, dsn)!, /delivery status notification/);
    const otherReport = Buffer.from(
      'Content-Type: multipart/report; report-type=disposition-notification; boundary=b\r\n',
    );
    assert.equal(bounceRefusal(normal, otherReport), undefined);
    // RFC 6533's reports, and a bare status part, are reports too.
    const globalDsn = Buffer.from('Content-Type: multipart/report; report-type=global-delivery-status; boundary=b\r\n');
    assert.match(bounceRefusal(normal, globalDsn)!, /delivery status notification/);
    const bare = Buffer.from('Content-Type: message/global-delivery-status\r\n');
    assert.match(bounceRefusal(normal, bare)!, /delivery status notification/);
  });

  it('reads the header block of a stored message across chunk boundaries, CRLF or LF', async () => {
    const crlf = Readable.from([Buffer.from('Subject: a\r\nFrom: b@c.example\r'), Buffer.from('\n\r\nbody\r\n')]);
    assert.equal((await readHeaderBlock(crlf)).toString(), 'Subject: a\r\nFrom: b@c.example\r\n');
    const lf = Readable.from([Buffer.from('Subject: a\nFrom: b@c.example\n\nbody\n')]);
    assert.equal((await readHeaderBlock(lf)).toString(), 'Subject: a\nFrom: b@c.example\n');
    const endless = Readable.from([Buffer.alloc(100_000, 'x')]);
    assert.equal((await readHeaderBlock(endless, 1000)).length, 1000);
    // The same from a message held in memory: whichever empty line comes first ends the block.
    assert.equal(headerBlockOf(Buffer.from('A: 1\r\n\r\nbody\n\nmore')).toString(), 'A: 1\r\n');
    assert.equal(headerBlockOf(Buffer.from('A: 1\nB: 2\n\nbody\r\n\r\n')).toString(), 'A: 1\nB: 2\n');
    assert.equal(headerBlockOf(Buffer.from('A: 1\r\nno body')).toString(), 'A: 1\r\nno body');
  });
});
