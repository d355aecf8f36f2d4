import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, BOB, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';

const SENDER = 'sender@example.org';

/** A stand-in exchange engine that takes every reply (202 with an envelope id). */
async function startAcceptingExchange() {
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () =>
      response.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'envelope-1' })),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function sealedWithAttachment(): Promise<Buffer> {
  return new MailComposer({
    from: `Sender <${SENDER}>`,
    to: [ALICE.email, BOB.email],
    subject: 'Contract',
    text: 'Please sign the contract.',
    headers: { 'X-Sealpost-Mobile': `${ALICE.email}=${ALICE.mobile}` },
    attachments: [{ filename: 'contract.pdf', content: '%PDF-1.4\n%%EOF\n', contentType: 'application/pdf' }],
  })
    .compile()
    .build();
}

describe("the sender's page: sign-in, the sender's routes, the trail's events and NOTIFY_SENDER_ON", () => {
  let harness: AuthHarness;
  let exchange: Awaited<ReturnType<typeof startAcceptingExchange>>;
  let keyDir: string;
  let dkimRecord: string;
  let client = 0;
  /** Each reader its own client address (AUTH_TRUST_PROXY), so that the per-IP limit counts one test's requests. */
  const reader = () => harness.reader(`203.0.113.${++client}`);

  before(async () => {
    keyDir = await mkdtemp(join(tmpdir(), 'sealpost-sender-dkim-'));
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    await writeFile(join(keyDir, 'dkim.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const der = publicKey.export({ type: 'spki', format: 'der' });
    dkimRecord = `v=DKIM1; k=ed25519; p=${der.subarray(der.length - 32).toString('base64')}`;
    exchange = await startAcceptingExchange();
    harness = await startAuthHarness({
      env: {
        INBOUND_SMTP_SENDER_DOMAINS: 'example.org',
        NOTIFY_SENDER_ON: 'opened,replied',
        AUTH_PUBLIC_URL: 'http://127.0.0.1:8081',
        AUTH_TRUST_PROXY: '1',
        AUTH_MAIL_FROM: 'Sealpost <no-reply@sealpost.test>',
        DKIM_DOMAIN: 'sealpost.test',
        DKIM_SELECTOR: 's1',
        DKIM_PRIVATE_KEY_FILE: join(keyDir, 'dkim.pem'),
        EXCHANGE_URL: exchange.url,
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
        SMS_LIMIT_NUMBER_HOURLY: '3',
      },
    });
  });
  after(async () => {
    await harness?.stop();
    await exchange?.close();
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  });

  /** The mails in the outbox (no OUTBOUND_SMTP_URL) to `to`, oldest first, raw. */
  async function mailsTo(to: string): Promise<Buffer[]> {
    const outbox = join(harness.auth.config.dataDir, 'outbox');
    const names = (await readdir(outbox).catch(() => [] as string[])).filter((n) => n.endsWith('.eml')).sort();
    const raws = await Promise.all(names.map((name) => readFile(join(outbox, name))));
    return raws.filter((raw) => new RegExp(`^To: ${to.replace(/[.+]/g, '\\$&')}\\r?$`, 'mi').test(raw.toString()));
  }
  async function lastCodeTo(to: string): Promise<string> {
    const raw = (await mailsTo(to)).at(-1);
    assert.ok(raw, `a code mail to ${to}`);
    return /code is (\d{6})/.exec(raw.toString())![1]!;
  }
  async function signInSender(email: string): Promise<Reader> {
    const sender = reader();
    await sender.get('/v1/sender/config');
    const sent = await sender.request('POST', '/v1/sender/code', { body: { email } });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const verified = await sender.request('POST', '/v1/sender/verify', { body: { code: await lastCodeTo(email) } });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    return sender;
  }
  async function until<T>(what: () => Promise<T> | T, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 5_000;
    let value = await what();
    while (!done(value) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      value = await what();
    }
    return value;
  }
  const dkimResolver = (async (name: string) => {
    if (name === 's1._domainkey.sealpost.test') return [[dkimRecord]];
    throw Object.assign(new Error(`no record for ${name}`), { code: 'ENOTFOUND' });
  }) as never;

  it('signs a sender in with a code by email to their address, rotating the session and its CSRF token', async () => {
    const sender = reader();
    const config = await sender.get('/v1/sender/config');
    assert.deepEqual(config.body, { signedIn: false, codeLength: 6 });
    assert.ok(sender.csrf && sender.token);
    const before = { token: sender.token, csrf: sender.csrf };
    const sent = await sender.request('POST', '/v1/sender/code', { body: { email: 'Sender@Example.ORG' } });
    assert.equal(sent.status, 200);
    assert.equal(sent.body.method, 'email');
    const code = await lastCodeTo(SENDER);
    const wrong = await sender.request('POST', '/v1/sender/verify', {
      body: { code: code === '000000' ? '1' : '000000' },
    });
    assertError(wrong, 401, 'invalid_code_or_email');
    assert.equal(wrong.body.attemptsLeft, 4);
    const verified = await sender.request('POST', '/v1/sender/verify', { body: { code } });
    assert.equal(verified.status, 200);
    assert.deepEqual(verified.body, { sender: SENDER });
    assert.notEqual(sender.token, before.token, 'the session id is rotated');
    assert.notEqual(sender.csrf, before.csrf);
    assert.deepEqual((await sender.get('/v1/sender/config')).body, { signedIn: true, sender: SENDER, codeLength: 6 });
    // The code is used up.
    assertError(await sender.request('POST', '/v1/sender/verify', { body: { code } }), 401, 'invalid_code_or_email');
  });

  it('gives a code to a subdomain, and none outside INBOUND_SMTP_SENDER_DOMAINS, answering both alike', async () => {
    const inside = reader();
    await inside.get('/v1/sender/config');
    const insideAnswer = await inside.request('POST', '/v1/sender/code', { body: { email: 'ann@mail.example.org' } });
    const outside = reader();
    await outside.get('/v1/sender/config');
    const outsideAnswer = await outside.request('POST', '/v1/sender/code', { body: { email: 'eve@example.org.evil' } });
    assert.equal(outsideAnswer.status, insideAnswer.status);
    assert.deepEqual(outsideAnswer.body, insideAnswer.body);
    assert.equal((await mailsTo('ann@mail.example.org')).length, 1);
    assert.equal((await mailsTo('eve@example.org.evil')).length, 0, 'no code outside the domains');
    assert.ok(
      harness.auth.logs.some((line) => /outside INBOUND_SMTP_SENDER_DOMAINS/.test(String(line.msg))),
      'the refusal is logged',
    );
    assertError(
      await outside.request('POST', '/v1/sender/verify', { body: { code: '123456' } }),
      401,
      'invalid_code_or_email',
    );
  });

  it('limits code requests per address inside and outside the domains alike (429 sms_rate_limit)', async () => {
    for (const email of ['limited@example.org', 'limited@elsewhere.test']) {
      const sender = reader();
      await sender.get('/v1/sender/config');
      for (let i = 0; i < 3; i++)
        assert.equal((await sender.request('POST', '/v1/sender/code', { body: { email } })).status, 200, email);
      const refused = await sender.request('POST', '/v1/sender/code', { body: { email } });
      assertError(refused, 429, 'sms_rate_limit');
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
    }
  });

  it("refuses the sender's routes to a recipient's session and to none (401), POST and PUT without CSRF", async () => {
    const record = harness.seal.register({
      raw: await sealedWithAttachment(),
      recipients: [ALICE, BOB],
      sender: SENDER,
    });
    const alice = reader();
    await signInAlice(harness, alice, record.id);
    const nobody = reader();
    await nobody.get('/v1/sender/config');
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/v1/sender/sealed'],
      ['GET', `/v1/sender/sealed/${record.id}`],
      ['POST', `/v1/sender/sealed/${record.id}/withdraw`, { reason: 'sent by mistake' }],
      ['PUT', `/v1/sender/sealed/${record.id}/expiry`, { expiresAt: new Date(Date.now() + 86_400_000).toISOString() }],
      ['GET', `/v1/sender/sealed/${record.id}/trail`],
      ['GET', `/v1/sender/sealed/${record.id}/trail?format=csv`],
    ];
    for (const [method, path, body] of routes) {
      assertError(await alice.request(method, path, { body }), 401, 'unauthenticated');
      assertError(await nobody.request(method, path, { body }), 401, 'unauthenticated');
    }
    const sender = await signInSender(SENDER);
    const seen = harness.seal.requests.length;
    for (const [method, path, body] of routes.filter(([method]) => method !== 'GET'))
      assertError(await sender.request(method, path, { body, csrf: null }), 403, 'csrf_token_invalid');
    assert.equal(harness.seal.requests.length, seen, 'nothing reached the seal service');
    assertError(
      await nobody.request('POST', '/v1/sender/code', { body: { email: SENDER }, csrf: null }),
      403,
      'csrf_token_invalid',
    );
  });

  it("shows and steers a sender's own messages; another sender gets 404 for each, its list without them", async () => {
    const own = harness.seal.register({ raw: await sealedWithAttachment(), recipients: [ALICE, BOB], sender: SENDER });
    const sender = await signInSender(SENDER);
    const other = await signInSender('other@example.org');

    const list = await sender.get('/v1/sender/sealed?limit=10&q=contract');
    assert.equal(list.status, 200);
    assert.ok(list.body.sealed.some((entry: { id: string }) => entry.id === own.id));
    assert.ok(
      harness.seal.requests.some(
        (r) =>
          r.url === '/v1/senders/sender%40example.org/sealed?limit=10&q=contract' &&
          r.authorization === 'Bearer test-service-token',
      ),
    );
    assert.equal((await other.get('/v1/sender/sealed')).body.sealed.length, 0);

    assertError(await other.get(`/v1/sender/sealed/${own.id}`), 404, 'not_found');
    assertError(
      await other.request('POST', `/v1/sender/sealed/${own.id}/withdraw`, { body: { reason: 'mine now' } }),
      404,
      'not_found',
    );
    const later = new Date(Date.now() + 7 * 86_400_000).toISOString();
    assertError(
      await other.request('PUT', `/v1/sender/sealed/${own.id}/expiry`, { body: { expiresAt: later } }),
      404,
      'not_found',
    );
    assertError(await other.get(`/v1/sender/sealed/${own.id}/trail`), 404, 'not_found');
    assertError(await other.get(`/v1/sender/sealed/${own.id}/trail?format=csv`), 404, 'not_found');
    assert.equal(own.end, undefined, 'not withdrawn');
    assert.equal(own.expiresAt, undefined, 'no end date given');

    const extended = await sender.request('PUT', `/v1/sender/sealed/${own.id}/expiry`, { body: { expiresAt: later } });
    assert.equal(extended.status, 200);
    assert.equal(extended.body.expiresAt, later);
    assertError(
      await sender.request('PUT', `/v1/sender/sealed/${own.id}/expiry`, {
        body: { expiresAt: '2020-01-01T00:00:00Z' },
      }),
      400,
      'validation_failed',
    );
    const withdrawn = await sender.request('POST', `/v1/sender/sealed/${own.id}/withdraw`, {
      body: { reason: 'wrong person', recipient: BOB.email },
    });
    assert.equal(withdrawn.status, 200);
    const bob = withdrawn.body.recipients.find((r: { email: string }) => r.email === BOB.email);
    assert.ok(bob.withdrawnAt, 'withdrawn for bob');
    assert.equal(withdrawn.body.end, undefined, 'the others read on');

    const trail = await sender.get(`/v1/sender/sealed/${own.id}/trail`);
    assert.equal(trail.status, 200);
    assert.equal(trail.body.id, own.id);
    const csv = await sender.get(`/v1/sender/sealed/${own.id}/trail?format=csv`);
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(csv.headers.get('content-disposition') ?? '', /^attachment; filename="sealpost-trail-[^"]+\.csv"$/);
    assert.match(csv.body.toString(), /^at,event,recipient,client,detail\r\n/);
  });

  it('reports code_sent, sign_in_failed and _succeeded, opened, attachment_downloaded, reply_sent to B', async () => {
    const record = harness.seal.register({
      raw: await sealedWithAttachment(),
      recipients: [ALICE, BOB],
      sender: SENDER,
    });
    const alice = harness.reader('198.51.100.23');
    await alice.get(`/v1/config?messageId=${record.id}`);
    await alice.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    const code = harness.sms.lastCodeTo(ALICE.mobile);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    assertError(await alice.request('POST', '/v1/auth/verify', { body: { code: wrong } }), 401, 'incorrect_code');
    assert.equal((await alice.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
    assert.equal((await alice.get(`/v1/message?messageId=${record.id}`)).status, 200);
    assert.equal((await alice.get(`/v1/message/attachments/0?messageId=${record.id}`)).status, 200);
    const replied = await alice.request('POST', `/v1/message/reply?messageId=${record.id}`, {
      body: { text: 'Signed.' },
    });
    assert.equal(replied.status, 202, JSON.stringify(replied.body));

    const client = '198.51.100.0/24';
    const expected = [
      { event: 'code_sent', recipient: ALICE.email, client, detail: { method: 'sms', destination: '+41*******67' } },
      { event: 'sign_in_failed', recipient: ALICE.email, client },
      { event: 'sign_in_succeeded', recipient: ALICE.email, client },
      { event: 'opened', recipient: ALICE.email, client },
      { event: 'attachment_downloaded', recipient: ALICE.email, client, detail: { attachment: 'contract.pdf' } },
      { event: 'reply_sent', recipient: ALICE.email, client },
    ];
    const events = await until(
      () => harness.seal.events.filter((e) => e.id === record.id).map(({ id: _id, ...event }) => event),
      (found) => found.length >= expected.length,
    );
    assert.deepEqual(events, expected);
  });

  it('mails the sender once at the first opening and once per reply, DKIM-signed, linking to /sent', async () => {
    const record = harness.seal.register({
      raw: await sealedWithAttachment(),
      recipients: [ALICE, BOB],
      sender: 'notified@example.org',
      subject: 'Lease',
    });
    const alice = reader();
    await signInAlice(harness, alice, record.id);
    for (let i = 0; i < 3; i++) assert.equal((await alice.get(`/v1/message?messageId=${record.id}`)).status, 200);
    for (const text of ['First reply.', 'Second reply.']) {
      const replied = await alice.request('POST', `/v1/message/reply?messageId=${record.id}`, { body: { text } });
      assert.equal(replied.status, 202, JSON.stringify(replied.body));
    }
    const reported = () => harness.seal.events.filter((e) => e.id === record.id && e.event !== 'code_sent').length;
    await until(reported, (n) => n >= 1 + 3 + 2);
    await until(
      () => mailsTo('notified@example.org'),
      (found) => found.length >= 3,
    );
    // Whatever else might still come: give a late duplicate the time to show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const all = await mailsTo('notified@example.org');
    assert.equal(all.length, 3, 'one mail for the first opening, one per reply');
    const parsed = await Promise.all(all.map((raw) => simpleParser(raw)));
    assert.deepEqual(parsed.map((mail) => mail.subject).sort(), [
      'Opened: Lease',
      'Reply sent: Lease',
      'Reply sent: Lease',
    ]);
    for (const [i, mail] of parsed.entries()) {
      assert.match(mail.text ?? '', new RegExp(`${ALICE.email.replace('.', '\\.')}`));
      assert.match(mail.text ?? '', /http:\/\/127\.0\.0\.1:8081\/sent/);
      const verified = await dkimVerify(all[i]!, { resolver: dkimResolver });
      assert.deepEqual(
        verified.results.map((r: { status: { result: string } }) => r.status.result),
        ['pass'],
      );
    }
  });
});
