import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { simpleParser, type ParsedMail } from 'mailparser';
import { exchangeDb } from '../support/exchange-delivery.ts';
import { assertStoredExactly, readPayload, startQuietExchange } from '../support/exchange-fuzz.ts';
import { ALICE, signInAlice, startAuthHarness, type AuthHarness } from '../support/auth-harness.ts';
import { assertErrorObject, fuzz, readBody } from '../support/fuzz.ts';
import type { ServiceUnderTest } from '../support/services.ts';

/** Header fields a message built from JSON may carry; anything else in its header block was injected. */
const BUILT_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'subject',
  'message-id',
  'date',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'x-sealpost-mobile',
  'x-sealpost-language',
  'x-sealpost-expires',
  'in-reply-to',
  'references',
  'reply-to',
]);
const PART_HEADERS = new Set(['content-type', 'content-transfer-encoding', 'content-disposition', 'content-id']);

/** The names of the header fields of the top-level header block, unfolded. */
function headerNames(raw: Buffer): string[] {
  const text = raw.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  return text
    .slice(0, end < 0 ? text.length : end)
    .split(/\r?\n(?![ \t])/)
    .map((line) => line.slice(0, line.indexOf(':')).toLowerCase());
}

function assertNoInjectedHeaders(raw: Buffer, parsed: ParsedMail, context: string): void {
  for (const name of headerNames(raw))
    assert.ok(BUILT_HEADERS.has(name), `unexpected header ${JSON.stringify(name)} in the stored message\n${context}`);
  for (const attachment of parsed.attachments) {
    for (const name of attachment.headers.keys())
      assert.ok(PART_HEADERS.has(name), `unexpected header ${JSON.stringify(name)} in an attachment part\n${context}`);
  }
}

const addressesOf = (field: ParsedMail['to']) =>
  field === undefined ? [] : [field].flat().flatMap((object) => object.value.map((entry) => entry.address));

const INJECTIONS = [
  'x\r\nX-Injected: yes',
  'x\nX-Injected: yes',
  'x\rX-Injected: yes',
  'x\r\n\r\n<body>',
  'x\u0000y',
  'x\u000bX-Injected: yes',
  'x\u000cy',
  'x\u001by',
  'x\u007fy',
];

describe('header injection through the JSON channel: POST /v1/messages', () => {
  let exchange: ServiceUnderTest;
  const accepted: string[] = [];

  const submit = async (body: unknown) => {
    const response = await fetch(`${exchange.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${exchange.serviceToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await readBody(response)) as Record<string, unknown> };
  };
  const base = () => ({
    from: 'Bob <bob@example.com>',
    to: ['alice@example.com'],
    cc: ['carol@example.com'],
    bcc: ['dave@example.com'],
    subject: 'Hello',
    text: 'Hi',
    inReplyTo: '<a@example.com>',
    references: ['<a@example.com>'],
    attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: 'aGVsbG8=' }],
    recipients: [{ email: 'alice@example.com', mobile: '+41791234567' }],
    expires: '7d',
  });

  before(async () => {
    exchange = await startQuietExchange();
  });
  after(async () => {
    await exchange?.stop();
  });

  it('refuses CR, LF and other controls in any field that becomes a header: a 400 error, nothing stored', async () => {
    const fields: Array<[string, (body: ReturnType<typeof base>, value: string) => void]> = [
      ['from', (b, v) => (b.from = `Bob ${v} <bob@example.com>`)],
      ['from address', (b, v) => (b.from = `bob@example.com${v}`)],
      ['to', (b, v) => (b.to = [`Alice ${v} <alice@example.com>`])],
      ['cc', (b, v) => (b.cc = [`carol@example.com${v}`])],
      ['bcc', (b, v) => (b.bcc = [`dave@example.com${v}`])],
      ['subject', (b, v) => (b.subject = v)],
      ['inReplyTo', (b, v) => (b.inReplyTo = `<a@example.com>${v}`)],
      ['references', (b, v) => (b.references = [`<a@example.com>${v}`])],
      ['attachments[0].filename', (b, v) => (b.attachments[0]!.filename = `a${v}.txt`)],
      ['attachments[0].contentType', (b, v) => (b.attachments[0]!.contentType = `text/plain; name="${v}"`)],
      ['recipients[0].email', (b, v) => (b.recipients[0]!.email = `alice@example.com${v}`)],
      ['recipients[0].mobile', (b, v) => (b.recipients[0]!.mobile = `+41791234567${v}`)],
      ['expires', (b, v) => (b.expires = `7d${v}`)],
    ];
    for (const [field, set] of fields) {
      for (const value of INJECTIONS) {
        const body = base();
        set(body, value);
        const answer = await submit(body);
        const what = `${field} = ${JSON.stringify(value)}`;
        assert.equal(answer.status, 400, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
        assertErrorObject(400, answer.body, what);
      }
    }
    assert.equal((await submit(base())).status, 202, 'the same message without the injection is taken');
    const stored = await exchangeDb(exchange).selectFrom('envelopes').select('id').execute();
    accepted.push(...stored.map((row) => row.id));
    assert.equal(accepted.length, 1);
    await assertStoredExactly(exchange, accepted);
  });

  it('keeps tricky legal values in their own header: none extra, names and subject round-trip (fuzzed)', async () => {
    // What the schema lets through: any text without C0 controls (tab allowed) or DEL, Unicode line
    // separators included, encoded-word look-alikes, header look-alikes.
    const oneLine = fc.oneof(
      fc.string({ maxLength: 60 }).map((text) => text.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '')),
      fc.constantFrom(
        'a\u2028X-Injected: 1',
        'a\u0085X-Injected: 1',
        'a\u2029b',
        '=?utf-8?Q?a=0D=0AX-Injected:_1?=',
        'x Bcc: mallory@evil.example',
        'tab\there',
        ' lead and trail ',
      ),
    );
    const displayName = oneLine.map((text) => text.replace(/[<>]/g, ''));
    const filename = oneLine.map((text) => (text.trim() === '' ? 'f.txt' : text));
    const message = fc.record({
      fromName: displayName,
      toName: displayName,
      subject: oneLine,
      filename,
      quoted: oneLine.map((text) => text.replace(/"/g, '')),
    });
    let taken = 0;
    await fuzz('json header values', message, 150, async ({ fromName, toName, subject, filename: name, quoted }) => {
      const body = {
        from: `${fromName} <bob@example.com>`,
        to: [`${toName} <alice@example.com>`],
        bcc: ['dave@example.com'],
        subject,
        text: 'Hi',
        attachments: [{ filename: name, contentType: `text/plain; name="${quoted}"`, content: 'aGVsbG8=' }],
      };
      const context = JSON.stringify(body);
      const answer = await submit(body);
      if (answer.status !== 202) {
        assertErrorObject(answer.status, answer.body, context);
        assert.equal(answer.status, 400, context);
        return;
      }
      taken++;
      const id = answer.body.id as string;
      accepted.push(id);
      const raw = await readPayload(exchange, id);
      const parsed = await simpleParser(raw);
      assertNoInjectedHeaders(raw, parsed, context);
      assert.deepEqual(addressesOf(parsed.from), ['bob@example.com'], context);
      assert.deepEqual(addressesOf(parsed.to), ['alice@example.com'], context);
      assert.equal(parsed.headers.get('bcc'), undefined, context);
      // Text that already looks like an encoded word goes out as it is and is decoded as one by every
      // reader (nodemailer's choice, as most mail programs'): it stays inside the Subject field all the same.
      // White space around a header value is not kept the same way by every encoding (RFC 5322 unfolding).
      if (!subject.includes('=?'))
        assert.equal((parsed.subject ?? '').trim(), subject.trim(), `the subject round-trips\n${context}`);
      assert.ok(!/X-Injected/i.test([...parsed.headers.keys()].join(',')), context);
      assert.equal(parsed.attachments.length, 1, context);
      if (!name.includes('=?'))
        assert.equal(
          (parsed.attachments[0]!.filename ?? '').trim(),
          name.trim(),
          `the file name round-trips\n${context}`,
        );
      const envelope = await exchangeDb(exchange)
        .selectFrom('envelopes')
        .select('recipients')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [...envelope.recipients].sort(),
        ['alice@example.com', 'dave@example.com'],
        `the envelope names exactly the recipients given\n${context}`,
      );
    });
    assert.ok(taken > 50, `${taken} messages taken`);
    await assertStoredExactly(exchange, accepted);
  });

  it('does not let a display name add a recipient', async () => {
    const answer = await submit({
      ...base(),
      cc: [],
      bcc: [],
      to: [
        '"Eve, Bcc: mallory@evil.example" <alice@example.com>',
        'Eve\\, To: mallory@evil.example <alice@example.com>',
      ],
    });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    const id = answer.body.id as string;
    accepted.push(id);
    const raw = await readPayload(exchange, id);
    const parsed = await simpleParser(raw);
    assertNoInjectedHeaders(raw, parsed, 'display names');
    assert.deepEqual([...new Set(addressesOf(parsed.to))], ['alice@example.com']);
    assert.doesNotMatch(JSON.stringify(addressesOf(parsed.to)), /mallory/);
    const envelope = await exchangeDb(exchange)
      .selectFrom('envelopes')
      .select('recipients')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(envelope.recipients, ['alice@example.com']);
  });
});

describe('header injection through a reply: a hostile sealed subject and uploaded file names', () => {
  let exchange: ServiceUnderTest;
  let harness: AuthHarness;

  before(async () => {
    exchange = await startQuietExchange();
    harness = await startAuthHarness({ env: { EXCHANGE_URL: exchange.url } });
  });
  after(async () => {
    await harness?.stop();
    await exchange?.stop();
  });

  it('builds the reply with exactly its own headers', async () => {
    // The sender of the sealed message chose its subject: encoded words that decode to line breaks.
    const record = harness.sealSample(
      [
        'From: Sender <sender@example.org>',
        'To: Alice <alice@example.com>',
        'Subject: =?utf-8?Q?Contract=0D=0ABcc:_mallory@evil.example=0D=0AX-Injected:_1?=',
        'Message-ID: <contract-2@example.org>',
        'References: <x@example.org> not-an-id <y@example.org>',
        'X-Sealpost-Mobile: alice@example.com=+41791234567',
        '',
        'Please sign.',
        '',
      ].join('\n'),
    );
    const alice = harness.reader();
    await signInAlice(harness, alice, record.id);
    await alice.get('/v1/message/files');
    const boundary = 'xinjectx';
    for (const params of [
      `filename="evil%22; filename=%22x.txt"`,
      `filename*=UTF-8''a%22%3B%20X-Injected%3A%201.txt`,
      `filename="semi;colon: X-Injected: 1.txt"`,
    ]) {
      const upload = await fetch(`${harness.auth.url}/v1/message/files`, {
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          cookie: alice.cookie!,
          'x-csrf-token': alice.csrf!,
        },
        body:
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; ${params}\r\n` +
          `Content-Type: text/plain\r\n\r\nfile\r\n--${boundary}--\r\n`,
      });
      assert.equal(upload.status, 201, await upload.text());
    }
    const files = ((await alice.get('/v1/message/files')).body.files as Array<{ name: string }>).map(
      (file) => file.name,
    );

    const sent = await alice.request('POST', '/v1/message/reply', {
      body: { text: 'Signed.\r\n.\r\nX-Injected: 1', bcc: ALICE.email },
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const raw = await readPayload(exchange, sent.body.envelopeId);
    const parsed = await simpleParser(raw);
    const context = raw.toString('latin1').slice(0, 3000);
    assertNoInjectedHeaders(raw, parsed, context);
    assert.equal(parsed.headers.get('bcc'), undefined, context);
    assert.deepEqual(addressesOf(parsed.to), ['sender@example.org'], context);
    assert.doesNotMatch(parsed.subject ?? '', /[\r\n]/, 'the subject is one line');
    assert.match(parsed.subject ?? '', /^Re: Contract/);
    assert.deepEqual(
      parsed.attachments.map((attachment) => attachment.filename),
      files,
      'each file name round-trips inside its own parameter',
    );
    const envelope = await exchangeDb(exchange)
      .selectFrom('envelopes')
      .select('recipients')
      .where('id', '=', sent.body.envelopeId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      [...envelope.recipients].sort(),
      [ALICE.email, 'sender@example.org'],
      'only the sender and the bcc copy to oneself',
    );
  });
});
