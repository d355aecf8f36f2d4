import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { simpleParser } from 'mailparser';
import { createLogger } from '../../kernel/logger.ts';
import { OrphanPayloadSweep } from '../delivery/orphans.ts';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import type { ExchangeTables } from '../tables.ts';
import { payloadKey } from '../handoff.ts';
import { refuseConnections } from '../../../test/support/db-faults.ts';
import { payloadCount, payloadKeys, readObject } from '../../../test/support/exchange-delivery.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';

const LIMIT = 256 * 1024;
const MAX_RECIPIENTS = 5;
const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('JSON inbound: POST /v1/messages', { timeout: 120_000 }, () => {
  let s3: S3TestServer;
  let exchange: ServiceUnderTest;
  let db: Kysely<ExchangeTables>;
  let rules: RuleStore;

  const submit = (body: unknown, token: string | null = exchange.serviceToken) =>
    fetch(`${exchange.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token !== null ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  const message = (extra: Record<string, unknown> = {}) => ({
    from: 'Bob Recipient <Bob@Example.COM>',
    to: ['alice@example.com'],
    subject: 'Re: your sealed message',
    text: 'Thanks, see the attachment.',
    ...extra,
  });
  const counts = async () => ({
    payloads: await payloadCount(exchange.objects),
    envelopes: Number(
      (
        await db
          .selectFrom('envelopes')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    statuses: Number(
      (
        await db
          .selectFrom('message_status')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
  });

  before(async () => {
    s3 = await startS3Server();
    exchange = await startServiceForTest(exchangeService, {
      s3,
      env: {
        // Keeps delivery workers (when the service runs them) away from the envelopes these tests inspect.
        DELIVERY_ENABLED: 'false',
        SEAL_URL: 'http://127.0.0.1:9',
        SMTP_MAX_MESSAGE_SIZE: String(LIMIT),
        SMTP_MAX_RECIPIENTS: String(MAX_RECIPIENTS),
      },
    });
    db = exchange.database.db.withSchema('exchange') as Kysely<ExchangeTables>;
    rules = new RuleStore(db);
  });
  after(async () => {
    await exchange?.stop();
    await s3?.stop();
  });
  beforeEach(async () => {
    await db.deleteFrom('rules').execute();
    await rules.create({
      name: 'relay replies',
      priority: 10,
      configuration: { params: { channel: 'json' }, outbound: ['smtp'] },
    });
  });

  it('answers 202 with the envelope id and stores a MIME message that parses back to what was sent', async () => {
    const file = randomBytes(5000);
    const res = await submit(
      message({
        to: ['Alice <alice@example.com>', 'carol@example.com'],
        cc: ['dave@example.com'],
        bcc: ['audit@example.com'],
        subject: 'Grüße — a reply',
        html: '<p>Thanks, see the attachment.</p>',
        inReplyTo: '<original@example.com>',
        references: ['<thread-start@example.com>', '<original@example.com>'],
        attachments: [
          { filename: 'report.pdf', contentType: 'application/pdf', content: file.toString('base64') },
          { filename: 'notes.txt', content: Buffer.from('plain notes').toString('base64') },
        ],
        recipients: [
          { email: 'alice@example.com', mobile: '+41 79 123 45 67' },
          { email: 'Dave@Example.com', mobile: '+4915123456789', language: 'de' },
          { email: 'carol@example.com', language: 'fr' },
        ],
      }),
    );
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.equal(body.status, 'accepted');
    assert.match(body.id, /^[0-9a-f-]{36}$/);
    assert.equal(res.headers.get('location'), `/v1/messages/${body.id}/status`);

    const raw = await readObject(exchange.objects, payloadKey(body.id));
    const parsed = await simpleParser(raw);
    assert.equal(parsed.subject, 'Grüße — a reply');
    assert.equal(parsed.text?.trim(), 'Thanks, see the attachment.');
    assert.equal(parsed.html, '<p>Thanks, see the attachment.</p>');
    assert.deepEqual(
      (parsed.from?.value ?? []).map((a) => [a.name, a.address]),
      [['Bob Recipient', 'Bob@example.com']],
    );
    const addressesOf = (field: typeof parsed.to) =>
      (Array.isArray(field) ? field : field ? [field] : []).flatMap((a) => a.value.map((v) => v.address));
    assert.deepEqual(addressesOf(parsed.to), ['alice@example.com', 'carol@example.com']);
    assert.deepEqual(addressesOf(parsed.cc), ['dave@example.com']);
    assert.equal(parsed.bcc, undefined, 'Bcc stays out of the headers');
    assert.doesNotMatch(raw.toString(), /audit@example\.com/);
    assert.equal(parsed.inReplyTo, '<original@example.com>');
    assert.deepEqual(parsed.references, ['<thread-start@example.com>', '<original@example.com>']);
    assert.ok(parsed.messageId && parsed.date);
    assert.deepEqual(
      parsed.attachments.map((a) => [a.filename, a.contentType]),
      [
        ['report.pdf', 'application/pdf'],
        ['notes.txt', 'text/plain'],
      ],
    );
    assert.ok(parsed.attachments[0]!.content.equals(file));
    assert.equal(parsed.attachments[1]!.content.toString(), 'plain notes');
    const mobiles = parsed.headerLines.filter((line) => line.key === 'x-sealpost-mobile').map((line) => line.line);
    assert.deepEqual(mobiles, [
      'X-Sealpost-Mobile: alice@example.com=+41791234567',
      'X-Sealpost-Mobile: dave@example.com=+4915123456789',
    ]);
    const languages = parsed.headerLines.filter((line) => line.key === 'x-sealpost-language').map((line) => line.line);
    assert.deepEqual(languages, [
      'X-Sealpost-Language: dave@example.com=de',
      'X-Sealpost-Language: carol@example.com=fr',
    ]);
    assert.match(raw.toString('latin1'), /\r\n\r\n/, 'CRLF line breaks, as over SMTP');
    assert.doesNotMatch(raw.toString('latin1'), /[^\r]\n/);

    const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    assert.equal(envelope.channel, 'json');
    assert.equal(envelope.sender, 'Bob@example.com');
    assert.deepEqual(envelope.recipients, [
      'alice@example.com',
      'carol@example.com',
      'dave@example.com',
      'audit@example.com',
    ]);
    assert.equal(envelope.size, raw.length);
    assert.deepEqual(envelope.outbound, ['smtp']);
    assert.equal(envelope.status, 'accepted');
    assert.ok(envelope.created_at instanceof Date && envelope.updated_at instanceof Date);
    const history = await db
      .selectFrom('message_status')
      .select('status')
      .where('envelope_id', '=', body.id)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      history.map((row) => row.status),
      ['accepted', 'routed'],
    );
  });

  it('stores a raw message unchanged but for CRLF line ends, with X-Sealpost-Mobile headers in front', async () => {
    const original = 'From: bob@example.com\nTo: alice@example.com\nSubject: raw\n\nkept as it is\n';
    const res = await submit({
      from: 'bob@example.com',
      to: ['alice@example.com'],
      bcc: ['archive@example.com'],
      recipients: [{ email: 'alice@example.com', mobile: '+41791234567' }],
      raw: Buffer.from(original).toString('base64'),
    });
    assert.equal(res.status, 202);
    const { id } = await res.json();
    // Every stored message has CRLF line ends (docs/decisions.md#line-ends): what is sealed and relayed is
    // the same.
    assert.equal(
      (await readObject(exchange.objects, payloadKey(id))).toString(),
      `X-Sealpost-Mobile: alice@example.com=+41791234567\r\n${original.replaceAll('\n', '\r\n')}`,
    );
    const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(envelope.recipients, ['alice@example.com', 'archive@example.com']);

    const plain = await submit({
      from: 'bob@example.com',
      to: ['alice@example.com'],
      raw: Buffer.from('Subject: x\r\n\r\ny\r\n').toString('base64'),
    });
    assert.equal(plain.status, 202);
    const plainId = (await plain.json()).id;
    assert.equal((await readObject(exchange.objects, payloadKey(plainId))).toString(), 'Subject: x\r\n\r\ny\r\n');
    const flags = (id: string) =>
      db.selectFrom('envelopes').select(['body_8bitmime', 'smtputf8']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(
      await flags(plainId),
      { body_8bitmime: false, smtputf8: false },
      'a 7-bit message is relayed without BODY=8BITMIME',
    );

    // 8-bit bytes in the body: relayed with BODY=8BITMIME; UTF-8 in a header: with SMTPUTF8 too.
    const eightBit = await submit({
      from: 'bob@example.com',
      to: ['alice@example.com'],
      raw: Buffer.from('Subject: x\r\n\r\nGrüße\r\n').toString('base64'),
    });
    assert.deepEqual(await flags((await eightBit.json()).id), { body_8bitmime: true, smtputf8: false });
    const utf8 = await submit({
      from: 'bob@example.com',
      to: ['alice@example.com'],
      raw: Buffer.from('Subject: Grüße\r\n\r\nGrüße\r\n').toString('base64'),
    });
    assert.deepEqual(await flags((await utf8.json()).id), { body_8bitmime: true, smtputf8: true });
  });

  it('refuses a body that is not UTF-8 with 400 validation_failed and stores nothing', async () => {
    const before = await counts();
    const json = Buffer.concat([
      Buffer.from('{"from": "b'),
      Buffer.from([0xf6]), // ö in Latin-1, never UTF-8 alone
      Buffer.from('b@example.com", "to": ["alice@example.com"], "subject": "x", "text": "y"}'),
    ]);
    const res = await fetch(`${exchange.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${exchange.serviceToken}` },
      body: json,
    });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.errorCode, 'validation_failed');
    assert.match(body.message, /not valid UTF-8/);
    assert.deepEqual(await counts(), before);
  });

  it('takes quoted local parts with escaped characters as RFC 5321 allows, kept as written', async () => {
    const res = await submit(
      message({ from: '"bo\\"b"@example.com', to: ['"we\\"ird"@example.com', 'Back <"back\\\\slash"@example.com>'] }),
    );
    assert.equal(res.status, 202, await res.clone().text());
    const { id } = await res.json();
    const envelope = await db.selectFrom('envelopes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(envelope.sender, '"bo\\"b"@example.com');
    assert.deepEqual(envelope.recipients, ['"we\\"ird"@example.com', '"back\\\\slash"@example.com']);
    const parsed = await simpleParser(await readObject(exchange.objects, payloadKey(id)));
    assert.deepEqual(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value.map((a) => a.address) : [], [
      '"we\\"ird"@example.com',
      '"back\\\\slash"@example.com',
    ]);
    for (const bad of ['"we"ird"@example.com', '"open@example.com']) {
      const refused = await submit(message({ to: [bad] }));
      assert.equal(refused.status, 400, bad);
    }
  });

  it('routes by sender: a rule for the from address wins over the catch-all', async () => {
    await rules.create({
      name: 'bob seals',
      priority: 1,
      configuration: { params: { channel: 'json', sender: 'bob@example.com' }, outbound: ['seal'] },
    });
    const { id } = await (await submit(message())).json();
    const envelope = await db
      .selectFrom('envelopes')
      .select(['outbound'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(envelope.outbound, ['seal']);
  });

  it('refuses invalid bodies with a 400 error object naming the field, and stores nothing', async () => {
    const start = await counts();
    const cases: Array<[unknown, RegExp, string?]> = [
      [message({ from: 'not an address' }), /^from "not an address" is not a valid email address$/, 'invalid_email'],
      [
        message({ to: ['alice@example.com', 'bob@@example.com'] }),
        /^to\[1\] "bob@@example\.com" is not a valid email address$/,
        'invalid_email',
      ],
      [message({ cc: ['Eve <eve@-bad-.example>'] }), /^cc\[0\] .* is not a valid email address$/, 'invalid_email'],
      [message({ to: [] }), /^to must NOT have fewer than 1 items$/],
      [message({ subject: 'hello\r\nBcc: victim@example.com' }), /^subject must match pattern/],
      [message({ subject: 'hello\nX-Injected: 1' }), /^subject must match pattern/],
      [message({ from: 'Bob\r\nBcc: x@example.com <bob@example.com>' }), /^from must match pattern/],
      [message({ to: ['alice@example.com\r\nBcc: victim@example.com'] }), /^to\[0\] must match pattern/],
      [
        message({ attachments: [{ filename: 'a\r\n.txt', content: 'aGk=' }] }),
        /^attachments\[0\]\.filename must match pattern/,
      ],
      [
        message({ attachments: [{ filename: 'a.txt', content: 'not base64!' }] }),
        /^attachments\[0\]\.content must be base64 without line breaks$/,
      ],
      [
        message({ attachments: [{ filename: 'a.txt', contentType: 'text/plain\r\nX-Evil: 1', content: 'aGk=' }] }),
        /^attachments\[0\]\.contentType must match pattern/,
      ],
      [message({ inReplyTo: 'no angle brackets' }), /^inReplyTo must match pattern/],
      [
        message({ recipients: [{ email: 'alice@example.com', mobile: '079 123 45 67' }] }),
        /^recipients\[0\]\.mobile "079 123 45 67" is not a valid mobile number/,
        'invalid_mobile',
      ],
      [
        message({ recipients: [{ email: 'alice@example.com', mobile: '+41 12' }] }),
        /^recipients\[0\]\.mobile "\+41 12" is not a valid mobile number/,
        'invalid_mobile',
      ],
      [
        message({ recipients: [{ email: 'stranger@example.com', mobile: '+41791234567' }] }),
        /^recipients\[0\]\.email stranger@example\.com is not among to, cc and bcc$/,
        'invalid_email',
      ],
      [
        message({ recipients: [{ email: 'alice@example.com' }] }),
        /^recipients\[0\] gives neither mobile nor language$/,
      ],
      [
        message({ recipients: [{ email: 'alice@example.com', language: 'es' }] }),
        /^recipients\[0\]\.language must be one of "en", "de", "fr", "it"$/,
      ],
      [message({ colour: 'red' }), /^colour is not a known field$/],
      [
        message({ attachments: [{ filename: 'a.txt', content: 'aGk=', path: '/etc/passwd' }] }),
        /^attachments\[0\]\.path is not a known field$/,
      ],
      [
        { from: 'bob@example.com', to: ['alice@example.com'] },
        /^subject is required \(or give the whole message as raw\)$/,
      ],
      [
        { from: 'bob@example.com', to: ['alice@example.com'], subject: 'empty' },
        /^text, html or attachments is required/,
      ],
      [message({ raw: Buffer.from('Subject: x\r\n\r\ny').toString('base64') }), /^subject cannot be combined with raw/],
      [
        {
          from: 'bob@example.com',
          to: ['alice@example.com'],
          raw: Buffer.from('just some text, no headers').toString('base64'),
        },
        /^raw is not an RFC 5322 message/,
      ],
      [
        message({
          to: ['a@example.com', 'b@example.com', 'c@example.com'],
          cc: ['d@example.com', 'e@example.com'],
          bcc: ['f@example.com'],
        }),
        /^to, cc and bcc name 6 recipients; at most 5 are allowed/,
      ],
      [{ to: ['alice@example.com'], subject: 's', text: 't' }, /^from is required$/],
    ];
    for (const [body, expected, errorCode] of cases) {
      const res = await submit(body);
      const error = await res.json();
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(error)}`);
      assert.equal(error.kind, 400);
      assert.match(error.message, expected);
      assert.equal(error.errorCode, errorCode ?? 'validation_failed');
    }
    assert.deepEqual(await counts(), start);
  });

  it('writes `expires` as the X-Sealpost-Expires header, built or in front of raw, and takes a raw one', async () => {
    const built = await submit(message({ expires: '7d' }));
    assert.equal(built.status, 202);
    const builtMail = await simpleParser(await readObject(exchange.objects, payloadKey((await built.json()).id)));
    assert.equal(builtMail.headers.get('x-sealpost-expires'), '7d');

    const original = 'From: bob@example.com\r\nTo: alice@example.com\r\nSubject: raw\r\n\r\nbody\r\n';
    const raw = { from: 'bob@example.com', to: ['alice@example.com'] };
    const inFront = await submit({ ...raw, expires: '2999-01-31T17:00:00+01:00', raw: b64(original) });
    assert.equal(inFront.status, 202);
    assert.equal(
      (await readObject(exchange.objects, payloadKey((await inFront.json()).id))).toString(),
      `X-Sealpost-Expires: 2999-01-31T17:00:00+01:00\r\n${original}`,
    );

    const own = `Subject: raw\r\nx-sealpost-expires:\r\n 1d12h\r\n\r\nbody\r\n`;
    const ownRes = await submit({ ...raw, raw: b64(own) });
    assert.equal(ownRes.status, 202, 'a folded header, its name in lower case');
    assert.equal((await readObject(exchange.objects, payloadKey((await ownRes.json()).id))).toString(), own);
  });

  it('refuses a bad, past or doubled X-Sealpost-Expires: 400 validation_failed naming it, nothing kept', async () => {
    const start = await counts();
    const raw = (header: string) => ({
      from: 'bob@example.com',
      to: ['alice@example.com'],
      raw: b64(`From: bob@example.com\r\n${header}\r\nSubject: raw\r\n\r\nX-Sealpost-Expires: body, not header\r\n`),
    });
    const expected =
      '; expected a life such as 7d, 72h or 1d12h, or an RFC 3339 time such as 2027-01-31T17:00:00+01:00';
    const cases: Array<[unknown, string]> = [
      [message({ expires: 'next week' }), `X-Sealpost-Expires: "next week" is not a duration${expected}`],
      [
        message({ expires: '2020-01-31T17:00:00Z' }),
        `X-Sealpost-Expires: "2020-01-31T17:00:00Z" lies in the past${expected}`,
      ],
      [message({ expires: '0s' }), `X-Sealpost-Expires: "0s" is no life at all${expected}`],
      [raw('X-Sealpost-Expires: 7 days'), `X-Sealpost-Expires: "7 days" is not a duration${expected}`],
      [
        raw('X-Sealpost-Expires: 2027-02-30T17:00:00Z'),
        `X-Sealpost-Expires: "2027-02-30T17:00:00Z" is not a valid time${expected}`,
      ],
      [
        raw('X-Sealpost-Expires: 2021-06-01T00:00:00+02:00'),
        `X-Sealpost-Expires: "2021-06-01T00:00:00+02:00" lies in the past${expected}`,
      ],
      [
        raw('X-Sealpost-Expires: 7d\r\nX-Sealpost-Expires: 2d'),
        'X-Sealpost-Expires is given 2 times ("7d", "2d"); give it once',
      ],
      [
        { ...raw('X-Sealpost-Expires: 7d'), expires: '2d' },
        'X-Sealpost-Expires is given 2 times ("2d", "7d"); give it once',
      ],
    ];
    for (const [body, sentence] of cases) {
      const res = await submit(body);
      const error = await res.json();
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(error)}`);
      assert.equal(error.errorCode, 'validation_failed');
      assert.equal(error.message, sentence);
    }
    assert.deepEqual(await counts(), start);
  });

  it('takes raw messages and attachments of several MB (a base64 pattern once blew the regex stack)', async () => {
    const big = await startServiceForTest(exchangeService, {
      env: { DELIVERY_ENABLED: 'false', SEAL_URL: 'http://127.0.0.1:9', SMTP_MAX_MESSAGE_SIZE: '16MiB' },
    });
    try {
      await new RuleStore(big.database.db.withSchema('exchange') as Kysely<ExchangeTables>).create({
        name: 'json',
        priority: 1,
        configuration: { params: { channel: 'json' }, outbound: ['smtp'] },
      });
      const post = (body: unknown) =>
        fetch(`${big.url}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${big.serviceToken}` },
          body: JSON.stringify(body),
        });
      const file = Buffer.alloc(6 * 1024 * 1024, 7);
      const withAttachment = await post(
        message({ attachments: [{ filename: 'big.bin', content: file.toString('base64') }] }),
      );
      assert.equal(withAttachment.status, 202, await withAttachment.clone().text());
      const raw = Buffer.concat([Buffer.from('Subject: big\r\n\r\n'), Buffer.alloc(6 * 1024 * 1024, 0x61)]);
      const rawRes = await post({ from: 'bob@example.com', to: ['alice@example.com'], raw: raw.toString('base64') });
      assert.equal(rawRes.status, 202, await rawRes.clone().text());
      const { id } = await rawRes.json();
      assert.ok((await readObject(big.objects, payloadKey(id))).equals(raw));
    } finally {
      await big.stop();
    }
  });

  it('requires the service token', async () => {
    for (const token of [null, 'wrong-token', exchange.adminToken]) {
      const res = await submit(message(), token);
      assert.equal(res.status, 401);
      const error = await res.json();
      assert.equal(error.kind, 401);
      assert.match(error.message, /service token/);
    }
  });

  it('answers 413 when the message is larger than SMTP_MAX_MESSAGE_SIZE, and stores nothing', async () => {
    const start = await counts();
    // Fits the request limit, but the MIME message (base64 lines of a 240 KiB file plus the text) does not.
    const built = await submit(
      message({
        text: 'x'.repeat(30_000),
        attachments: [{ filename: 'big.bin', content: randomBytes(240 * 1024).toString('base64') }],
      }),
    );
    assert.equal(built.status, 413);
    assert.deepEqual(
      { ...(await built.json()), id: undefined },
      {
        id: undefined,
        kind: 413,
        errorCode: 'payload_too_large',
        message: `The message is larger than the limit of ${LIMIT} bytes (SMTP_MAX_MESSAGE_SIZE)`,
      },
    );
    const raw = await submit({
      from: 'bob@example.com',
      to: ['alice@example.com'],
      raw: Buffer.from(`Subject: big\r\n\r\n${'r'.repeat(LIMIT)}`).toString('base64'),
    });
    assert.equal(raw.status, 413);
    // Beyond what the route reads at all (base64 of the limit plus room for the rest): refused unread.
    const huge = await submit(message({ text: 'h'.repeat(Math.ceil((LIMIT * 4) / 3) + 300 * 1024) }));
    assert.equal(huge.status, 413);
    assert.equal((await huge.json()).errorCode, 'payload_too_large');
    assert.deepEqual(await counts(), start);
  });

  it('answers 503 saying a rule must be created first when there is no rule, and 503 when none matches', async () => {
    const start = await counts();
    await db.deleteFrom('rules').execute();
    const none = await submit(message());
    assert.equal(none.status, 503);
    assert.deepEqual(
      { ...(await none.json()), id: 'x' },
      {
        id: 'x',
        kind: 503,
        errorCode: 'unavailable',
        message: 'No delivery rule exists yet: create one with POST /v1/config before sending messages',
      },
    );
    await rules.create({
      name: 'smtp only',
      priority: 1,
      configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
    });
    await rules.create({
      name: 'carol only',
      priority: 2,
      configuration: { params: { channel: 'json', sender: 'carol@example.com' }, outbound: ['smtp'] },
    });
    const unmatched = await submit(message());
    assert.equal(unmatched.status, 503);
    assert.match(
      (await unmatched.json()).message,
      /^No delivery rule matches channel json and sender Bob@example\.com/,
    );
    assert.deepEqual(await counts(), start);
  });

  it('answers 503 while the object store is down, keeps nothing, and 202 again once it is back', async () => {
    const before = await counts();
    await s3.pause();
    try {
      const res = await submit(
        message({ attachments: [{ filename: 'a.bin', content: randomBytes(50_000).toString('base64') }] }),
      );
      assert.equal(res.status, 503);
      const error = await res.json();
      assert.equal(error.kind, 503);
      assert.equal(error.message, 'Message storage is unavailable; try again later');
    } finally {
      await s3.resume();
    }
    assert.deepEqual(await counts(), before);
    assert.equal((await submit(message())).status, 202);
  });

  it('answers 503 when the envelope cannot be written, deleting the payload it stored; 202 again after', async () => {
    const before = await counts();
    await sql`alter table exchange.envelopes rename to envelopes_offline`.execute(exchange.database.db);
    try {
      const res = await submit(message());
      assert.equal(res.status, 503);
      assert.equal((await res.json()).message, 'Message database is unavailable; try again later');
    } finally {
      await sql`alter table exchange.envelopes_offline rename to envelopes`.execute(exchange.database.db);
    }
    assert.deepEqual(await counts(), before, 'no orphan payload, no rows');
    assert.equal((await submit(message())).status, 202);
  });

  it('answers 503 while the database refuses connections, leaving the payload to the sweep; 202 after', async () => {
    const before = await counts();
    const keysBefore = new Set(await payloadKeys(exchange.objects));
    const restore = await refuseConnections(exchange.config.databaseUrl!);
    let status: number;
    let error: { kind: number; message: string };
    try {
      const res = await submit(message());
      status = res.status;
      error = await res.json();
    } finally {
      await restore();
    }
    assert.equal(status, 503);
    assert.deepEqual([error.kind, error.message], [503, 'Message database is unavailable; try again later']);
    // A connection-level error leaves unknown whether the row was committed: the payload stays until the
    // orphan sweep has seen it without a row for its grace period (none here).
    assert.deepEqual(
      await counts(),
      { ...before, payloads: before.payloads + 1 },
      'the payload is kept; no envelope, no status row',
    );
    const kept = (await payloadKeys(exchange.objects)).filter((key) => !keysBefore.has(key));
    await new OrphanPayloadSweep({
      db,
      objects: exchange.objects,
      graceMs: 0,
      logger: createLogger({ level: 'silent' }),
    }).sweep();
    assert.equal(await exchange.objects.head(kept[0]!), undefined, 'the orphan sweep deleted it');
    assert.equal((await submit(message())).status, 202);
  });

  it('is described in the OpenAPI document with its schema and the service token', async () => {
    const spec = await (await fetch(`${exchange.url}/openapi.json`)).json();
    const post = spec.paths['/v1/messages'].post;
    assert.deepEqual(post.security, [{ serviceToken: [] }]);
    const schema = post.requestBody.content['application/json'].schema;
    assert.deepEqual(schema.required.sort(), ['from', 'to']);
    for (const field of [
      'cc',
      'bcc',
      'subject',
      'text',
      'html',
      'inReplyTo',
      'references',
      'attachments',
      'recipients',
      'raw',
      'expires',
    ]) {
      assert.ok(schema.properties[field], field);
    }
    assert.match(schema.properties.expires.description, /X-Sealpost-Expires.*400 validation_failed/s);
    assert.equal(schema.additionalProperties, false);
    assert.ok(post.responses['202'] && post.responses['503'] && post.responses['413']);
  });
});
