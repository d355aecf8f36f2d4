import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { exchangeService } from '../../exchange/service.ts';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, BOB, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import { Reader } from '../../../test/support/auth-reader.ts';
import { settled } from '../../../test/support/exchange-delivery.ts';
import { generatedBuffer, uploadFile } from '../../../test/support/multipart-upload.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink.ts';
import { refusedPort } from '../../../test/support/ports.ts';

const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), generatedBuffer(40_000), Buffer.from('\n%%EOF\n')]);
/** Bytes of every value, so that any re-encoding on the way would show; 3 MiB, so the reply is several MB of base64. */
const BINARY = Buffer.concat([Buffer.from('SEALPOST-TEST-DATA\0'), randomBytes(3 * 1024 * 1024)]);

/** A stand-in exchange engine that answers every submission with one status (and counts them). */
async function startFakeExchange(status: number) {
  let received = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received++;
      response
        .writeHead(status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ id: 'x', kind: status, message: 'fake exchange' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get received() {
      return received;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('sending a reply through the exchange engine', () => {
  let s3: S3TestServer;
  let sink: SmtpSink;
  let exchange: ServiceUnderTest;
  let harness: AuthHarness;
  let messageId: string;
  let alice: Reader;

  const draftKeys = async () => {
    const keys: string[] = [];
    for await (const object of harness.auth.objects.list('auth/')) keys.push(object.key);
    return keys;
  };

  before(async () => {
    [s3, sink] = await Promise.all([startS3Server(), startSmtpSink()]);
    exchange = await startServiceForTest(exchangeService, {
      s3,
      env: { OUTBOUND_SMTP_URL: sink.url, DELIVERY_POLL_INTERVAL: '50ms' },
    });
    // The reply rule: JSON messages whose envelope sender is the organisation's reply address go out by SMTP.
    const rule = await fetch(`${exchange.url}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${exchange.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: "Alice's replies",
        priority: 10,
        configuration: { params: { channel: 'json', sender: 'replies@example.org' }, outbound: ['smtp'] },
      }),
    });
    assert.equal(rule.status, 201, await rule.text());
    harness = await startAuthHarness({
      s3,
      env: {
        EXCHANGE_URL: exchange.url,
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
        REPLY_FROM: 'Example Org <replies@example.org>',
      },
    });
    messageId = harness.sealSample().id;
    alice = harness.reader();
    await signInAlice(harness, alice, messageId);
  });
  after(async () => {
    await harness?.stop();
    await exchange?.stop();
    await Promise.all([sink?.close(), s3?.stop()]);
  });

  it('delivers to the sender, from the organisation for the recipient, threaded, files byte for byte', async () => {
    for (const [filename, content] of [
      ['signed contract.pdf', PDF],
      ['measurements.bin', BINARY],
    ] as const) {
      const uploaded = await uploadFile(alice, { filename, content });
      assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    }
    const sent = await alice.request('POST', '/v1/message/reply', {
      body: { text: 'Signed, see attached.', html: '<p>Signed, see <b>attached</b>.</p>', bcc: ' alice@EXAMPLE.com ' },
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    assert.equal(sent.body.files, 2);

    await settled(exchange, sent.body.envelopeId, 'delivered');
    const delivered = sink.messages.filter((message) => message.messageId === sent.body.messageId);
    assert.equal(delivered.length, 1);
    const [message] = delivered;
    // The envelope: from the organisation's reply address (SPF aligns with From); to the sender and,
    // as the bcc copy, the recipient herself.
    assert.equal(message!.from, 'replies@example.org');
    assert.deepEqual([...message!.to].sort(), [ALICE.email, 'sender@example.org']);

    const parsed = await simpleParser(message!.raw);
    assert.equal(parsed.subject, 'Re: Contract');
    // From is the organisation (DMARC alignment), the recipient visible in its name and in Reply-To.
    assert.deepEqual(parsed.from?.value, [
      { name: 'Alice (alice@example.com) via Example Org', address: 'replies@example.org' },
    ]);
    assert.deepEqual(parsed.replyTo?.value, [{ name: 'Alice', address: ALICE.email }]);
    assert.match(parsed.messageId ?? '', /@example\.org>$/, "the Message-ID is in the organisation's domain");
    assert.deepEqual(
      (Array.isArray(parsed.to) ? parsed.to : [parsed.to]).flatMap((to) => to!.value.map((v) => v.address)),
      ['sender@example.org'],
    );
    assert.equal(parsed.inReplyTo, '<contract-1@example.org>');
    assert.deepEqual([parsed.references].flat(), ['<contract-1@example.org>']);
    assert.equal(parsed.messageId, sent.body.messageId);
    assert.equal(parsed.text?.trim(), 'Signed, see attached.');
    assert.match(String(parsed.html), /<b>attached<\/b>/);
    assert.doesNotMatch(
      message!.raw.toString('latin1').split('\r\n\r\n')[0]!,
      /^bcc:/im,
      'the bcc copy is not named in a header',
    );
    assert.deepEqual(
      parsed.attachments.map((a) => [a.filename, a.contentType]),
      [
        ['signed contract.pdf', 'application/pdf'],
        ['measurements.bin', 'application/octet-stream'],
      ],
    );
    assert.ok(parsed.attachments[0]!.content.equals(PDF), 'the PDF arrives byte for byte');
    assert.ok(parsed.attachments[1]!.content.equals(BINARY), 'the binary file arrives byte for byte');

    // Sent: the draft and its files are gone.
    const draft = await alice.get('/v1/message/reply');
    assert.equal(draft.body.text, '');
    assert.deepEqual(draft.body.files, []);
    assert.deepEqual(await draftKeys(), []);
  });

  it('sanitises HTML as the reader does: no script or handler leaves; a text-only reply gets no HTML', async () => {
    const attack = '<script>alert(1)</script><img src=x onerror=alert(1)>';
    const sent = await alice.request('POST', '/v1/message/reply', {
      body: {
        text: `Plain ${attack}`,
        html:
          '<p onclick="steal()">Signed, <b>see</b> <a href="javascript:alert(2)">here</a>.</p>' +
          `${attack}<iframe src="https://example.net"></iframe>`,
      },
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    await settled(exchange, sent.body.envelopeId, 'delivered');
    const message = sink.messages.find((m) => m.messageId === sent.body.messageId)!;
    const parsed = await simpleParser(message.raw);
    const html = String(parsed.html);
    assert.match(html, /<p>Signed, <b>see<\/b> <a[^>]*>here<\/a>\.<\/p>/, 'the formatting is kept');
    assert.doesNotMatch(html, /<script|alert\(1\)|onerror|onclick|javascript:|<iframe/i, html);
    // The text part is text/plain: what it says is shown as written, never run.
    assert.equal(parsed.text?.trim(), `Plain ${attack}`);

    const textOnly = await alice.request('POST', '/v1/message/reply', { body: { text: attack } });
    assert.equal(textOnly.status, 202, JSON.stringify(textOnly.body));
    await settled(exchange, textOnly.body.envelopeId, 'delivered');
    const plain = sink.messages.find((m) => m.messageId === textOnly.body.messageId)!;
    assert.doesNotMatch(plain.raw.toString('latin1'), /text\/html/i, 'no HTML part is built from the text');
  });

  it('refuses a bad bcc (invalid_bcc_address), another address (email_mismatch); sends none, keeps text', async () => {
    await alice.request('PUT', '/v1/message/reply', { body: { text: 'Draft kept', bcc: ALICE.email } });
    const before = sink.messages.length;
    // 400 characters: too long for an address, refused as one (not by the body schema).
    const overLong = `${'a'.repeat(388)}@example.com`;
    const refusals = [
      ...['not an address', 'alice@', '<alice@example.com>', overLong].map(
        (bcc) => [bcc, 400, 'invalid_bcc_address'] as const,
      ),
      ...[BOB.email, 'alice@example.org', 'alice+copy@example.com'].map((bcc) => [bcc, 403, 'email_mismatch'] as const),
    ];
    for (const [i, [bcc, status, errorCode]] of refusals.entries()) {
      const text = `Rewritten before the refusal no. ${i}`;
      assertError(
        await alice.request('POST', '/v1/message/reply', { body: { text, html: `<p>${text}</p>`, bcc } }),
        status,
        errorCode,
      );
      // What the reader wrote is saved all the same; the refused bcc is not.
      const draft = (await alice.get('/v1/message/reply')).body;
      assert.deepEqual(
        [draft.text, draft.html, draft.bcc],
        [text, `<p>${text}</p>`, ALICE.email],
        `after ${JSON.stringify(bcc.slice(0, 40))}`,
      );
    }
    // A bcc that is not a string is a malformed request, refused before anything is saved.
    assertError(
      await alice.request('POST', '/v1/message/reply', { body: { text: 'not saved', bcc: 42 } }),
      400,
      'validation_failed',
    );
    assert.equal(
      (await alice.get('/v1/message/reply')).body.text,
      `Rewritten before the refusal no. ${refusals.length - 1}`,
    );
    assert.equal(sink.messages.length, before);
  });

  it("with REPLY_FROM_RECIPIENT, routes by recipient as sender: Bob's matches no rule, 503, draft kept", async () => {
    // A second auth instance on the same database and bucket that keeps the recipient's own From.
    const own = await startAuthHarness({
      seal: harness.seal,
      sms: harness.sms,
      databaseUrl: harness.auth.config.databaseUrl,
      env: {
        EXCHANGE_URL: exchange.url,
        REPLY_FROM_RECIPIENT: 'true',
        S3_ENDPOINT: s3.endpoint,
        S3_BUCKET: harness.auth.config.s3.bucket!,
        S3_REGION: s3.region,
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      },
    });
    try {
      const bob = own.reader();
      await bob.get(`/v1/config?messageId=${messageId}`);
      await bob.request('POST', '/v1/auth/code', { body: { messageId, email: BOB.email, method: 'email' } });
      const outbox = join(own.auth.config.dataDir, 'outbox');
      const mail = (await readdir(outbox))
        .filter((name) => name.endsWith('.eml'))
        .sort()
        .at(-1)!;
      const code = /Your Sealpost code is (\d{6})/.exec(await readFile(join(outbox, mail), 'utf8'))![1]!;
      assert.equal((await bob.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);

      const refused = await bob.request('POST', '/v1/message/reply', { body: { text: "Bob's answer" } });
      assertError(refused, 503, 'unavailable');
      assert.equal(
        (await bob.get('/v1/message/reply')).body.text,
        "Bob's answer",
        'what Bob wrote is kept as his draft',
      );
    } finally {
      await own.stop();
    }
  });

  it('keeps draft and files when the exchange engine fails: 503, 502 or upload_limit_reached as fits', async () => {
    await alice.request('PUT', '/v1/message/reply', { body: { text: 'Second reply' } });
    const uploaded = await uploadFile(alice, { filename: 'annex.pdf', content: PDF });
    assert.equal(uploaded.status, 201);
    const keys = await draftKeys();

    // A second auth instance on the same database and bucket, whose EXCHANGE_URL is a fake engine.
    for (const [status, expected, errorCode] of [
      [503, 503, 'unavailable'],
      [500, 502, 'upstream_failed'],
      [413, 403, 'upload_limit_reached'],
      [0, 503, 'unavailable'],
    ] as const) {
      // Status 0: an engine nobody can reach (a port that refuses, not one just closed that the
      // next server could be given).
      const fake =
        status === 0
          ? { url: `http://127.0.0.1:${await refusedPort()}`, received: 0, close: async () => {} }
          : await startFakeExchange(status);
      const second = await startAuthHarness({
        seal: harness.seal,
        sms: harness.sms,
        databaseUrl: harness.auth.config.databaseUrl,
        env: {
          EXCHANGE_URL: fake.url,
          S3_ENDPOINT: s3.endpoint,
          S3_BUCKET: harness.auth.config.s3.bucket!,
          S3_REGION: s3.region,
          S3_ACCESS_KEY_ID: s3.accessKeyId,
          S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        },
      });
      try {
        const elsewhere = new Reader(second.auth.url);
        elsewhere.cookie = alice.cookie;
        elsewhere.csrf = alice.csrf;
        const failed = await elsewhere.request('POST', '/v1/message/reply', { body: { text: 'Second reply, final' } });
        assertError(failed, expected, errorCode);
        if (status !== 0) assert.equal(fake.received, 1, 'the fake engine got the whole request');
      } finally {
        await second.stop();
        await fake.close();
      }
      const draft = await alice.get('/v1/message/reply');
      assert.equal(draft.body.text, 'Second reply, final', `after ${status}: the text sent is kept as the draft`);
      assert.deepEqual(
        draft.body.files.map((f: { id: string }) => f.id),
        [uploaded.body.id],
        `after ${status}: the file is kept`,
      );
      assert.deepEqual(await draftKeys(), keys);
    }

    // And the kept draft goes out once the engine takes it.
    const sent = await alice.request('POST', '/v1/message/reply', { body: { text: 'Second reply, final' } });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    assert.equal(sent.body.files, 1);
    await settled(exchange, sent.body.envelopeId, 'delivered');
    const parsed = await simpleParser(sink.messages.find((m) => m.messageId === sent.body.messageId)!.raw);
    assert.ok(parsed.attachments[0]!.content.equals(PDF));
    assert.deepEqual(await draftKeys(), []);
  });
});
