import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describeAttachment, PARSER_OPTIONS, readMessage } from './read.ts';

// A 1×1 PNG.
const PIXEL = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n%%EOF\n');

async function compose(options: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> {
  return new MailComposer({ from: 'sender@example.org', to: 'alice@example.com', subject: 'Pictures', ...options })
    .compile()
    .build();
}

describe('readMessage: which attachments the HTML shows itself', () => {
  it('embeds the picture a cid: reference shows into the HTML; inline files it does not show stay files', async () => {
    const raw = await compose({
      html: '<p>Logo: <img src="cid:logo@example.org" alt="logo"></p>',
      attachments: [
        { filename: 'logo.png', content: PIXEL, contentType: 'image/png', cid: 'logo@example.org' },
        { filename: 'invoice.pdf', content: PDF, contentType: 'application/pdf', contentDisposition: 'inline' },
        { filename: 'photo.png', content: PIXEL, contentType: 'image/png', contentDisposition: 'inline' },
      ],
    });
    const view = await readMessage(raw);
    const byName = Object.fromEntries(view.attachments.map((a) => [a.filename, a]));
    assert.deepEqual(
      Object.fromEntries(view.attachments.map((a) => [a.filename, { inline: a.inline, embedded: a.embedded }])),
      {
        'logo.png': { inline: true, embedded: true },
        'invoice.pdf': { inline: true, embedded: false },
        'photo.png': { inline: true, embedded: false },
      },
    );
    assert.ok(view.html!.includes(`src="data:image/png;base64,${PIXEL.toString('base64')}"`), view.html!);
    assert.ok(!view.html!.includes('cid:'));
    assert.equal(byName['logo.png']!.size, PIXEL.length);
  });

  it('does not count a cid: reference to something that is not a picture, and drops it from the HTML', async () => {
    const raw = await compose({
      html: '<p><img src="cid:doc@example.org"></p>',
      attachments: [{ filename: 'doc.pdf', content: PDF, contentType: 'application/pdf', cid: 'doc@example.org' }],
    });
    const view = await readMessage(raw);
    assert.equal(view.attachments[0]!.embedded, false);
    assert.ok(!view.html!.includes('cid:') && !view.html!.includes('data:'), view.html!);
  });

  it('bounds its data: URLs: a picture referenced thousands of times is written only up to 20 MiB', async () => {
    const big = Buffer.alloc(300 * 1024, 7); // 400 KiB as base64: about 50 copies fit in the budget
    const raw = await compose({
      html: '<img src="cid:big@example.org">'.repeat(2_000),
      attachments: [{ filename: 'big.png', content: big, contentType: 'image/png', cid: 'big@example.org' }],
    });
    const view = await readMessage(raw);
    assert.equal(view.attachments[0]!.embedded, true);
    const written = view.html!.split('data:image/png;base64,').length - 1;
    assert.ok(written > 10 && written < 60, `${written} copies written`);
    assert.ok(view.html!.length < 25 * 1024 * 1024, `${view.html!.length} characters`);
  });
});

describe('readMessage: what it takes from the parser', () => {
  it('agrees with simpleParser on headers, bodies and every attachment, though it keeps no file it lists', async () => {
    const file = Buffer.alloc(200_000, 'x');
    const raw = await compose({
      subject: '=?UTF-8?Q?Vertrag_f=C3=BCr_M=C3=A4rz?=',
      to: 'Alice <alice@example.com>, team: bob@example.com, carol@example.com;',
      cc: 'dave@example.com',
      replyTo: 'Desk <desk@example.org>',
      date: new Date('2026-11-03T10:00:00Z'),
      text: 'Line one\r\nLine two\r\n',
      html: '<p>Logo <img src="cid:logo@example.org"></p>',
      attachments: [
        { filename: 'logo.png', content: PIXEL, contentType: 'image/png', cid: 'logo@example.org' },
        { filename: 'big.bin', content: file, contentType: 'application/octet-stream' },
        { filename: 'Ünïcode – name.pdf', content: PDF, contentType: 'application/pdf' },
        { filename: 'note.txt', content: 'a note', contentType: 'text/plain', contentDisposition: 'inline' },
      ],
    });
    const view = await readMessage(raw);
    const parsed = await simpleParser(raw, { ...PARSER_OPTIONS, keepCidLinks: true });
    assert.equal(view.subject, 'Vertrag für März');
    assert.equal(view.subject, parsed.subject);
    assert.deepEqual(
      [view.from, view.to, view.cc, view.replyTo].map((list) => list.map((entry) => entry.address)),
      [
        ['sender@example.org'],
        ['alice@example.com', 'bob@example.com', 'carol@example.com'],
        ['dave@example.com'],
        ['desk@example.org'],
      ],
    );
    assert.equal(view.date, parsed.date!.toISOString());
    assert.equal(view.text, parsed.text);
    assert.deepEqual(
      view.attachments.map(({ filename, contentType, size, inline }) => ({ filename, contentType, size, inline })),
      parsed.attachments.map((attachment, index) => ({
        ...describeAttachment(attachment, index),
        size: attachment.content.length,
      })),
    );
    assert.equal(view.attachments[1]!.size, file.length);
    assert.ok(view.html!.includes(`data:image/png;base64,${PIXEL.toString('base64')}`));
  });
});

describe('readMessage: what it never shows', () => {
  it('shows no Bcc, nor any address it names, for a message sealed with its Bcc header', async () => {
    // Sealed before the exchange removed Bcc on the way to the seal service: the header is in the record.
    const raw = Buffer.from(
      'From: Dana <dana@sender.example>\r\nTo: Erin <erin@rcpt.example>\r\nCc: carl@rcpt.example\r\n' +
        'Bcc: Hidden One <hidden@blind.example>,\r\n secret@blind.example\r\nSubject: blind\r\n' +
        'Date: Tue, 24 Nov 2026 10:00:00 +0000\r\n\r\nHello\r\n',
    );
    const view = await readMessage(raw);
    assert.deepEqual(
      view.to.map((a) => a.address),
      ['erin@rcpt.example'],
    );
    assert.deepEqual(
      view.cc.map((a) => a.address),
      ['carl@rcpt.example'],
    );
    const shown = JSON.stringify(view);
    assert.doesNotMatch(shown, /blind\.example|Hidden One|bcc/i);
  });
});
