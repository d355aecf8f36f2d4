import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import nodemailer from 'nodemailer';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, BOB, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { refusedPort } from '../../../test/support/ports.ts';
import { startSealStandIn, type SealStandIn } from '../../../test/support/seal-stand-in.ts';
import { MessageResponse } from '../../contracts/auth.ts';

const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(3000, 7), Buffer.from('\n%%EOF\n')]);
const PNG_1PX = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** A real MIME message as a sender's mail server would hand it over (the stream transport keeps Bcc). */
/** The `seal` field GET /v1/message answers for a record whose content checked out. */
function verifiedSeal(record: ReturnType<SealStandIn['register']>) {
  return {
    verified: true,
    cid: record.cid,
    sha256: record.sha256,
    sealedAt: record.sealedAt,
    pins: record.pins.map(({ cluster, status }) => ({ cluster, status })),
  };
}

async function composeMessage(): Promise<Buffer> {
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const info = await composer.sendMail({
    from: 'Sender <sender@example.org>',
    to: 'Alice <alice@example.com>',
    cc: 'bob@example.com',
    bcc: 'hidden@example.com',
    subject: 'Contract – please sign',
    date: new Date('2026-11-03T10:00:00Z'),
    headers: { 'X-Sealpost-Mobile': 'alice@example.com=+41791234567' },
    text: 'Please sign the contract.',
    html:
      '<p onclick="steal()">Please <b>sign</b> the <a href="https://example.org/contract">contract</a>.</p>' +
      '<script>alert(1)</script><style>p{}</style>' +
      '<img src="https://tracker.example.net/pixel.gif" alt="pixel">' +
      '<img src="cid:logo@example.org" alt="logo">' +
      '<a href="javascript:alert(2)">click</a><iframe src="https://example.net"></iframe>' +
      '<form action="https://example.net"><input name="password"></form>',
    attachments: [
      { filename: 'contract.pdf', content: PDF, contentType: 'application/pdf' },
      { filename: 'page.html', content: '<script>alert(3)</script>', contentType: 'text/html' },
      { filename: 'Vertrag – März.pdf', content: PDF, contentType: 'application/pdf' },
      { filename: 'logo.png', content: PNG_1PX, contentType: 'image/png', cid: 'logo@example.org' },
    ],
  });
  return info.message as Buffer;
}

describe('reading the sealed message', () => {
  let harness: AuthHarness;
  let reader: Reader;
  let record: ReturnType<AuthHarness['sealSample']>;

  before(async () => {
    harness = await startAuthHarness({ env: { SMS_LIMIT_NUMBER_INTERVAL: '0s' } });
    record = harness.seal.register({ raw: await composeMessage(), recipients: [ALICE, BOB], subject: 'Contract' });
    reader = harness.reader();
    await signInAlice(harness, reader, record.id);
  });
  after(async () => {
    await harness?.stop();
  });

  it('shows the headers, the text, the sanitised HTML, the attachment list and the seal status', async () => {
    const response = await reader.get('/v1/message');
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const message = response.body;
    assert.equal(message.id, record.id);
    assert.equal(message.subject, 'Contract – please sign');
    assert.deepEqual(message.from, [{ name: 'Sender', address: 'sender@example.org' }]);
    assert.deepEqual(message.to, [{ name: 'Alice', address: 'alice@example.com' }]);
    assert.deepEqual(message.cc, [{ name: '', address: 'bob@example.com' }]);
    assert.equal(message.date, '2026-11-03T10:00:00.000Z');
    assert.equal(message.text.trim(), 'Please sign the contract.');
    assert.deepEqual(message.seal, verifiedSeal(record));
    assert.deepEqual(
      message.attachments.map((a: Record<string, unknown>) => [a.index, a.filename, a.contentType, a.inline]),
      // In MIME order: the embedded image sits with the HTML (multipart/related) before the attached files.
      [
        [0, 'logo.png', 'image/png', true],
        [1, 'contract.pdf', 'application/pdf', false],
        [2, 'page.html', 'text/html', false],
        [3, 'Vertrag – März.pdf', 'application/pdf', false],
      ],
    );
    assert.equal(message.attachments[1].size, PDF.length);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
  });

  it("answers the schema's fields and nothing else, though its serializer is JSON.stringify", async () => {
    const message = (await reader.get('/v1/message')).body;
    assert.deepEqual(Object.keys(message).sort(), Object.keys(MessageResponse.properties).sort());
    assert.deepEqual(Object.keys(message.seal).sort(), Object.keys(MessageResponse.properties.seal.properties).sort());
    assert.ok(message.attachments.length > 0);
    const fields = Object.keys(MessageResponse.properties.attachments.items.properties).sort();
    for (const attachment of message.attachments) assert.deepEqual(Object.keys(attachment).sort(), fields);
  });

  it('keeps HTML to formatting: no script, style, handler, frame, form, javascript: link or remote image', async () => {
    const { html } = (await reader.get('/v1/message')).body;
    assert.match(
      html,
      new RegExp(
        'Please <b>sign</b> the <a href="https://example.org/contract" target="_blank" ' +
          'rel="noopener noreferrer nofollow">contract</a>',
      ),
    );
    for (const banned of [
      '<script',
      'alert(1)',
      '<style',
      'onclick',
      'tracker.example.net',
      'javascript:',
      '<iframe',
      '<form',
      '<input',
    ]) {
      assert.ok(!html.includes(banned), `${banned} in ${html}`);
    }
    // The embedded image stays (mailparser turned its cid: reference into a data: URI).
    assert.match(html, /<img alt="logo" src="data:image\/png;base64,[^"]+" \/>/);
  });

  it('counts the remote images left out; keeps the https ones only when the reader asks (images=remote)', async () => {
    const plain = (await reader.get('/v1/message')).body;
    assert.equal(plain.remoteImages, 1);
    const shown = await reader.get('/v1/message?images=remote');
    assert.equal(shown.status, 200, JSON.stringify(shown.body));
    assert.equal(shown.body.remoteImages, 1);
    assert.match(shown.body.html, /<img alt="pixel" src="https:\/\/tracker\.example\.net\/pixel\.gif" \/>/);
    assert.ok(!shown.body.html.includes('<script'));
    assertError(await reader.get('/v1/message?images=all'), 400, 'validation_failed');
  });

  it("hides other recipients' data: X-Sealpost-Mobile numbers and the Bcc list", async () => {
    const body = JSON.stringify((await reader.get('/v1/message')).body);
    assert.ok(!body.includes('+41791234567'));
    assert.ok(!body.includes('hidden@example.com'));
  });

  it('downloads an attachment as a file that never renders in our origin', async () => {
    const pdf = await reader.get('/v1/message/attachments/1');
    assert.equal(pdf.status, 200);
    assert.deepEqual(pdf.body, PDF);
    assert.equal(pdf.headers.get('content-type'), 'application/pdf');
    assert.equal(
      pdf.headers.get('content-disposition'),
      `attachment; filename="contract.pdf"; filename*=UTF-8''contract.pdf`,
    );
    assert.equal(pdf.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(pdf.headers.get('content-security-policy'), "default-src 'none'; sandbox");

    const html = await reader.get('/v1/message/attachments/2');
    assert.equal(html.body.toString(), '<script>alert(3)</script>');
    assert.match(html.headers.get('content-disposition')!, /^attachment;/);

    const unicode = await reader.get('/v1/message/attachments/3');
    assert.equal(
      unicode.headers.get('content-disposition'),
      `attachment; filename="Vertrag _ M_rz.pdf"; filename*=UTF-8''Vertrag%20%E2%80%93%20M%C3%A4rz.pdf`,
    );
  });

  it('lists and downloads attachment names without bidi or hidden characters: the real extension shows', async () => {
    const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
    const { message: raw } = await composer.sendMail({
      from: 'sender@example.org',
      to: 'alice@example.com',
      subject: 'Invoice',
      text: 'See the invoice.',
      attachments: [
        { filename: 'invoice\u202Efdp.exe', content: PDF, contentType: 'application/pdf' },
        { filename: 'report\u200B.pdf\u00AD', content: PDF, contentType: 'application/pdf' },
      ],
    });
    const other = harness.seal.register({ raw: raw as Buffer, recipients: [ALICE], subject: 'Invoice' });
    const own = harness.reader();
    await signInAlice(harness, own, other.id);

    const listed = await own.get('/v1/message');
    assert.deepEqual(
      listed.body.attachments.map((a: { filename: string }) => a.filename),
      ['invoicefdp.exe', 'report.pdf'],
    );
    const download = await own.get('/v1/message/attachments/0');
    assert.equal(download.status, 200);
    assert.equal(
      download.headers.get('content-disposition'),
      `attachment; filename="invoicefdp.exe"; filename*=UTF-8''invoicefdp.exe`,
    );
    assert.equal(
      (await own.get('/v1/message/attachments/1')).headers.get('content-disposition'),
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    );
  });

  it('answers 404 for an attachment index the message does not have, 400 for one that is not an index', async () => {
    assertError(await reader.get('/v1/message/attachments/9'), 404, 'not_found');
    assertError(await reader.get('/v1/message/attachments/-1'), 400, 'validation_failed');
  });

  it('asks B once per read, for its reader: the content comes with the seal it was verified against', async () => {
    const before = harness.seal.requests.length;
    const response = await reader.get('/v1/message');
    assert.equal(response.status, 200);
    assert.equal(response.body.seal.cid, record.cid);
    assert.deepEqual(
      harness.seal.requests.slice(before).map((request) => request.url),
      [`/v1/sealed/${record.id}/content?recipient=alice%40example.com`],
    );
  });

  it('asks the seal service with the service token', async () => {
    const seen = harness.seal.requests.filter((r) => r.url.startsWith(`/v1/sealed/${record.id}`));
    assert.ok(seen.length > 0);
    assert.ok(seen.every((r) => r.authorization === 'Bearer test-service-token'));
  });

  it('shows nothing when the content fails the seal: 502 seal_broken with the CID, not a failure for now', async () => {
    const broken = harness.seal.register({ raw: await composeMessage(), recipients: [ALICE] });
    const other = harness.reader();
    await signInAlice(harness, other, broken.id);
    harness.seal.breakSeal(broken.id);
    const response = await other.get('/v1/message');
    assertError(response, 502, 'seal_broken');
    assert.equal(response.body.cid, broken.cid, 'the reader can show which seal broke');
    assert.ok(!JSON.stringify(response.body).includes('Please sign'));
    const download = await other.get('/v1/message/attachments/0');
    assertError(download, 502, 'seal_broken');
    assert.equal(download.body.cid, broken.cid);
  });

  it('answers 404 not_found on both reading routes once the seal service no longer has the message', async () => {
    const gone = harness.seal.register({ raw: await composeMessage(), recipients: [ALICE] });
    const other = harness.reader();
    await signInAlice(harness, other, gone.id);
    harness.seal.forget(gone.id);
    assertError(await other.get('/v1/message'), 404, 'not_found');
    assertError(await other.get('/v1/message/attachments/0'), 404, 'not_found');
  });
});

describe('a seal service from before the X-Sealpost-Seal header', () => {
  let seal: SealStandIn;
  let harness: AuthHarness;
  before(async () => {
    seal = await startSealStandIn({ serviceToken: 'test-service-token', sealFacts: false });
    harness = await startAuthHarness({ seal });
  });
  after(async () => {
    await harness?.stop();
    await seal?.close();
  });

  it('shows the seal from the record, and names a broken seal by its CID all the same', async () => {
    const record = seal.register({ raw: await composeMessage(), recipients: [ALICE] });
    const reader = harness.reader();
    await signInAlice(harness, reader, record.id);
    const before = seal.requests.length;
    const response = await reader.get('/v1/message');
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.deepEqual(response.body.seal, verifiedSeal(record));
    assert.deepEqual(
      seal.requests
        .slice(before)
        .map((request) => request.url)
        .sort(),
      [`/v1/sealed/${record.id}`, `/v1/sealed/${record.id}/content?recipient=alice%40example.com`],
    );
    seal.breakSeal(record.id);
    const broken = await reader.get('/v1/message');
    assertError(broken, 502, 'seal_broken');
    assert.equal(broken.body.cid, record.cid);
  });
});

describe('the seal service out of reach', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SEAL_URL: `http://127.0.0.1:${await refusedPort()}` } });
  });
  after(async () => {
    await harness?.stop();
  });

  it('answers 502 with an error object', async () => {
    assertError(await harness.reader().get('/v1/config?messageId=abc'), 502, 'upstream_failed');
    const reader = harness.reader();
    await reader.get('/v1/config');
    const code = await reader.request('POST', '/v1/auth/code', {
      body: { messageId: 'abc', email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    assertError(code, 502, 'upstream_failed');
  });
});

describe('a sealed message larger than SEAL_MAX_MESSAGE_SIZE', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SEAL_MAX_MESSAGE_SIZE: '64KiB' } });
  });
  after(async () => {
    await harness?.stop();
  });

  it('is not held whole for GET /v1/message (502), while its attachments still stream', async () => {
    const file = Buffer.alloc(100 * 1024, 'x');
    const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
    const info = await composer.sendMail({
      from: 'sender@example.org',
      to: ALICE.email,
      subject: 'Large',
      text: 'See attached.',
      attachments: [{ filename: 'large.txt', content: file, contentType: 'text/plain' }],
    });
    const record = harness.seal.register({ raw: info.message as Buffer, recipients: [ALICE] });
    const reader = harness.reader();
    await signInAlice(harness, reader, record.id);
    const shown = await reader.get('/v1/message');
    assertError(shown, 502, 'upstream_failed');
    assert.match(shown.body.message, /SEAL_MAX_MESSAGE_SIZE/);
    const download = await reader.get('/v1/message/attachments/0');
    assert.equal(download.status, 200);
    assert.deepEqual(download.body, file);
  });
});
