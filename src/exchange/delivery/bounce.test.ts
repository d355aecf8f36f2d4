import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import { headerBlockOf, readHeaderBlock } from '../outbound/header-block.ts';
import { bounceRefusal, composeBounce } from './bounce.ts';

const headers = Buffer.from(
  'From: Alice <alice@sender.example>\r\nSubject: Grüße\r\nMessage-ID: <m1@sender.example>\r\n',
);

describe('bounces (RFC 3464)', () => {
  it('builds a multipart/report with the human part, the delivery status and the original headers', async () => {
    const raw = await composeBounce({
      reportingMta: 'mx.sealpost.test',
      from: 'Sealpost <notify@sealpost.test>',
      envelope: {
        id: '6f1c4b0e-0000-4000-8000-000000000001',
        sender: 'alice@sender.example',
        created_at: new Date('2026-11-20T10:00:00Z'),
      },
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
    const text = raw.toString();
    const parts = text
      .split(/\r\n--[^\r\n]+\r\n/)
      .slice(1)
      .filter((part) => part.trim() !== '');
    assert.deepEqual(
      parts.map((p) => /^Content-Type: ([^;\r\n]+)/.exec(p)?.[1]),
      ['text/plain', 'message/delivery-status', 'text/rfc822-headers'],
    );
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
    assert.ok(returned?.content.equals(headers), 'the original headers come back byte for byte, 8-bit text included');
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
