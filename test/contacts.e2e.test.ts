import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { Reader } from './support/auth-reader.ts';
import { createTestDatabase } from './support/postgres.ts';
import { nextCode, readerLink, SENDER, sendSealedMail } from './support/reader-browser.ts';
import { SEALPOST_BIN, startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmsCapture, type SmsCapture } from './support/sms-capture.ts';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.ts';

/**
 * Where the numbers come from (docs/design.md#contacts), on the real stack (`sealpost start all` on PostgreSQL,
 * SMTP in and out, an SMS provider): the operator's directory, the sender's header, the number a recipient
 * confirmed, a number added after an email sign-in, and SIGN_IN_REQUIRE_SMS at the intake.
 */

const ADMIN = 'contacts-admin-token';
const SERVICE = 'contacts-service-token';

interface Stack {
  sms: SmsCapture;
  sink: SmtpSink;
  sealpost: SealpostProcess;
  dataDir: string;
  database: { url: string; drop(): Promise<void> };
}

function useStack(name: string, env: Record<string, string> = {}): Stack {
  const stack = {} as Stack;
  before(async () => {
    stack.sms = await startSmsCapture();
    stack.sink = await startSmtpSink();
    stack.dataDir = await mkdtemp(join(tmpdir(), `sealpost-${name}-`));
    // PostgreSQL, as in production: the embedded PGlite has one connection for all three services.
    stack.database = await createTestDatabase(name.replace(/-/g, '_'));
    stack.sealpost = await startSealpostProcess(
      {
        SEALPOST_DATA_DIR: stack.dataDir,
        DATABASE_URL: stack.database.url,
        SMS_PROVIDER: 'http',
        SMS_PROVIDER_URL: `${stack.sms.url}/sms`,
        OUTBOUND_SMTP_URL: stack.sink.url,
        DELIVERY_POLL_INTERVAL: '100ms',
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
        ADMIN_TOKEN: ADMIN,
        SERVICE_TOKEN: SERVICE,
        ...env,
      },
      { timeoutMs: 120_000 },
    );
  });
  after(async () => {
    const code = await stack.sealpost?.stop();
    await stack.sink?.close();
    await stack.sms?.close();
    if (stack.dataDir) await rm(stack.dataDir, { recursive: true, force: true });
    await stack.database?.drop();
    if (stack.sealpost)
      assert.equal(code, 0, `sealpost stopped with ${code}:\n${stack.sealpost.stdout().slice(-2000)}`);
  });
  return stack;
}

/** `sealpost contacts ...` against the stack's seal service: its exit code and what it printed. */
function cli(stack: Stack, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SEALPOST_BIN, 'contacts', ...args],
      {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          SEAL_URL: stack.sealpost.urls.seal,
          ADMIN_TOKEN: ADMIN,
          SERVICE_TOKEN: SERVICE,
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function importCsv(sealUrl: string, csv: string, query = '') {
  const response = await fetch(`${sealUrl}/v1/admin/contacts${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
    body: csv,
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** The sealed message's recipient as the seal service recorded it (method, mobile, mobileSource). */
async function sealedRecipient(sealUrl: string, messageId: string, email: string) {
  const response = await fetch(`${sealUrl}/v1/sealed/${messageId}`, {
    headers: { authorization: `Bearer ${SERVICE}` },
  });
  assert.equal(response.status, 200);
  const record = (await response.json()) as { recipients: Array<Record<string, string>> };
  return record.recipients.find((recipient) => recipient.email === email)!;
}

/** Seals a mail to `to` (with the header number when given) and returns the sealed message's id. */
async function sealTo(stack: Stack, to: { email: string; mobile?: string }, subject: string): Promise<string> {
  const before = stack.sink.messages.length;
  await sendSealedMail(stack.sealpost.ports.smtp, [to], { subject, text: 'Sealed for you.' });
  const link = await readerLink(stack.sink, to.email, before);
  return /\/m\/([A-Za-z0-9_-]+)/.exec(link)![1]!;
}

/** Asks for an SMS code for `email` at `mobile`; resolves with the code the SMS brought to that number. */
async function smsCode(stack: Stack, reader: Reader, messageId: string, email: string, mobile: string) {
  await reader.get(`/v1/config?messageId=${messageId}`);
  const before = stack.sms.messages.length;
  const sent = await reader.request('POST', '/v1/auth/code', { body: { messageId, email, mobile, method: 'sms' } });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  return nextCode(stack.sms, mobile, before);
}

async function signInBySms(stack: Stack, messageId: string, email: string, mobile: string): Promise<Reader> {
  const reader = new Reader(stack.sealpost.urls.auth);
  const code = await smsCode(stack, reader, messageId, email, mobile);
  const verified = await reader.request('POST', '/v1/auth/verify', { body: { code } });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
  return reader;
}

/** The 6-digit code of the latest mail to `email` beyond the `before` first at the sink. */
async function mailedCode(sink: SmtpSink, email: string, before: number): Promise<string> {
  const about = (m: SmtpSink['messages'][number]) => m.to.includes(email) && /code is \d{6}/.test(m.raw.toString());
  await sink.waitUntil(() => sink.messages.slice(before).some(about), 20_000, `the code mail to ${email}`);
  return /code is (\d{6})/.exec(sink.messages.slice(before).findLast(about)!.raw.toString())![1]!;
}

describe('the contacts directory and the numbers that carry over (real stack)', () => {
  const stack = useStack('contacts');
  const ALICE = 'alice@example.com';
  const CAROL = 'carol@example.com';
  const ERIN = 'erin@example.com';

  it('imports a CSV of 3 contacts with `sealpost contacts import`, the bad row reported by its line', async () => {
    const csv = [
      'email,mobile,language',
      `${ALICE},+41 79 123 45 67,de`,
      'bob@example.com,12345,',
      `${CAROL},0041 79 123 45 68,`,
      '',
    ].join('\r\n');
    const file = join(stack.dataDir, 'contacts.csv');
    await writeFile(file, csv);
    const imported = await cli(stack, ['import', file, '--json']);
    assert.equal(imported.code, 1, `a refused row is exit 1: ${imported.stderr}`);
    const answer = JSON.parse(imported.stdout);
    assert.equal(answer.imported, 2);
    assert.equal(answer.refusedCount, 1);
    assert.equal(answer.refused[0].line, 3);
    assert.equal(answer.refused[0].email, 'bob@example.com');
    assert.match(answer.refused[0].reason, /mobile "12345"/);
    const plain = await cli(stack, ['import', file]);
    assert.match(plain.stdout, /^2 contacts imported, 1 refused\n {2}line 3 \(bob@example\.com\): mobile "12345"/);
    const shown = await cli(stack, ['show', CAROL]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /directory: \+41791234568 /);

    const carol = await fetch(`${stack.sealpost.urls.seal}/v1/admin/contacts/${CAROL}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.deepEqual(
      { ...((await carol.json()) as object), updatedAt: undefined },
      { email: CAROL, mobile: '+41791234568', applies: 'directory', updatedAt: undefined },
    );
    const bob = await fetch(`${stack.sealpost.urls.seal}/v1/admin/contacts/bob@example.com`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(bob.status, 404);
    const unauthenticated = await fetch(`${stack.sealpost.urls.seal}/v1/admin/contacts/${CAROL}`);
    assert.equal(unauthenticated.status, 401);
  });

  it('refuses the whole file with allOrNothing when one row is bad, and writes nothing', async () => {
    const csv = ['email,mobile', 'dave@example.com,+41791234569', 'not-an-address,+41791234569', ''].join('\n');
    const refused = await importCsv(stack.sealpost.urls.seal, csv, '?allOrNothing=true');
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.errorCode, 'validation_failed', JSON.stringify(refused.body));
    assert.ok(Array.isArray(refused.body.refused), JSON.stringify(refused.body));
    assert.deepEqual(
      refused.body.refused.map((row: { line: number }) => row.line),
      [3],
    );
    const dave = await fetch(`${stack.sealpost.urls.seal}/v1/admin/contacts/dave@example.com`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(dave.status, 404, 'nothing of the refused file was written');

    const json = await fetch(`${stack.sealpost.urls.seal}/v1/admin/contacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify([
        { email: 'frank@example.com', mobile: '+41 79 000 00 01', language: 'fr-CH' },
        { email: 'grace@example.com', mobile: '+41 79 000 00 02', language: 'es' },
        { email: 'heidi@example.com' },
      ]),
    });
    const answer = (await json.json()) as { imported: number; refused: Array<{ line: number; reason: string }> };
    assert.equal(answer.imported, 1);
    assert.deepEqual(
      answer.refused.map((row) => [row.line, row.reason]),
      [
        [2, 'language "es" is not one of en, de, fr, it'],
        [3, 'mobile is missing'],
      ],
    );
    const metrics = await (await fetch(`${stack.sealpost.metricsUrl}/metrics`)).text();
    // The CLI's two imports of 3 rows, the refused file of 2 and this one of 3.
    assert.match(metrics, /seal_contacts_import_rows_total\{[^}]*result="written"[^}]*\} 5\b/);
    assert.match(metrics, /seal_contacts_import_rows_total\{[^}]*result="refused"[^}]*\} 6\b/);
  });

  it("signs a recipient the sender gave no number in by SMS at the directory's number", async () => {
    const id = await sealTo(stack, { email: ALICE }, 'No header, a listed recipient');
    const recorded = await sealedRecipient(stack.sealpost.urls.seal, id, ALICE);
    assert.equal(recorded.method, 'sms');
    assert.equal(recorded.mobile, '+41791234567');
    assert.equal(recorded.mobileSource, 'directory');
    assert.equal(recorded.language, 'de', "the directory's language where the sender chose none");
    const reader = await signInBySms(stack, id, ALICE, '+41791234567');
    assert.equal((await reader.get(`/v1/message?messageId=${id}`)).status, 200);
    // The email method is refused: the message is protected by the number.
    const other = new Reader(stack.sealpost.urls.auth);
    await other.get(`/v1/config?messageId=${id}`);
    const byEmail = await other.request('POST', '/v1/auth/code', {
      body: { messageId: id, email: ALICE, method: 'email' },
    });
    assert.equal(byEmail.body.errorCode, 'forbidden_auth_method');
  });

  it("lets the sender's header override the directory", async () => {
    const id = await sealTo(stack, { email: CAROL, mobile: '+41791234599' }, 'Header over directory');
    const recorded = await sealedRecipient(stack.sealpost.urls.seal, id, CAROL);
    assert.equal(recorded.mobile, '+41791234599');
    assert.equal(recorded.mobileSource, 'header');
    await signInBySms(stack, id, CAROL, '+41791234599');

    // Removed from the directory: her next message without a header signs in by email; the sealed one is unchanged.
    const remove = () =>
      fetch(`${stack.sealpost.urls.seal}/v1/admin/contacts/${CAROL}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${ADMIN}` },
      });
    assert.equal((await remove()).status, 204);
    assert.equal((await remove()).status, 404);
    const after = await sealTo(stack, { email: CAROL }, 'After the directory forgot her');
    assert.equal((await sealedRecipient(stack.sealpost.urls.seal, after, CAROL)).method, 'email');
    assert.equal((await sealedRecipient(stack.sealpost.urls.seal, id, CAROL)).mobileSource, 'header');
  });

  it('lets a number the recipient confirmed override the directory and the replaced header, later only', async () => {
    const first = await sealTo(stack, { email: ALICE }, 'Before the change');
    const reader = await signInBySms(stack, first, ALICE, '+41791234567');
    const changed = await reader.request('PUT', `/v1/mobile?messageId=${first}`, { body: { mobile: '+41791230000' } });
    assert.equal(changed.status, 202, JSON.stringify(changed.body));
    const toCurrent = await nextCode(stack.sms, '+41791234567', stack.sms.messages.length - 1);
    const before = stack.sms.messages.length;
    const step = await reader.request('POST', `/v1/mobile/verify?messageId=${first}`, { body: { code: toCurrent } });
    assert.equal(step.status, 202, JSON.stringify(step.body));
    const toNew = await nextCode(stack.sms, '+41791230000', before);
    const done = await reader.request('POST', `/v1/mobile/verify?messageId=${first}`, { body: { code: toNew } });
    assert.equal(done.status, 200, JSON.stringify(done.body));

    // The record of the message being read is sealed: it keeps the number it was sealed with.
    assert.equal((await sealedRecipient(stack.sealpost.urls.seal, first, ALICE)).mobileSource, 'directory');
    const later = await sealTo(stack, { email: ALICE }, 'After the change, no header');
    const laterRecord = await sealedRecipient(stack.sealpost.urls.seal, later, ALICE);
    assert.equal(laterRecord.mobile, '+41791230000');
    assert.equal(laterRecord.mobileSource, 'confirmed');
    await signInBySms(stack, later, ALICE, '+41791230000');

    // A sender still giving the number Alice replaced: her confirmed one applies.
    const stale = await sealTo(stack, { email: ALICE, mobile: '+41791234567' }, 'A stale header');
    const staleRecord = await sealedRecipient(stack.sealpost.urls.seal, stale, ALICE);
    assert.equal(staleRecord.mobile, '+41791230000');
    assert.equal(staleRecord.mobileSource, 'confirmed');
    // A header with another number is the sender's choice for this message.
    const other = await sealTo(stack, { email: ALICE, mobile: '+41791239999' }, 'A new header');
    assert.equal((await sealedRecipient(stack.sealpost.urls.seal, other, ALICE)).mobileSource, 'header');

    const shown = await fetch(`${stack.sealpost.urls.seal}/v1/admin/contacts/${ALICE}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const contact = (await shown.json()) as { applies: string; confirmed: { mobile: string } };
    assert.equal(contact.applies, 'confirmed');
    assert.equal(contact.confirmed.mobile, '+41791230000');
  });

  it('lets a recipient signed in by email add a number, told by email, which their next message asks for', async () => {
    const first = await sealTo(stack, { email: ERIN }, 'By email code');
    assert.equal((await sealedRecipient(stack.sealpost.urls.seal, first, ERIN)).method, 'email');
    const reader = new Reader(stack.sealpost.urls.auth);
    await reader.get(`/v1/config?messageId=${first}`);
    let mails = stack.sink.messages.length;
    const asked = await reader.request('POST', '/v1/auth/code', {
      body: { messageId: first, email: ERIN, method: 'email' },
    });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const code = await mailedCode(stack.sink, ERIN, mails);
    assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);

    const withoutCsrf = await reader.request('PUT', `/v1/mobile/later?messageId=${first}`, {
      body: { mobile: '+41791115555' },
      csrf: null,
    });
    assert.equal(withoutCsrf.body.errorCode, 'csrf_token_invalid');
    const bad = await reader.request('PUT', `/v1/mobile/later?messageId=${first}`, { body: { mobile: '079 111' } });
    assert.equal(bad.body.errorCode, 'invalid_mobile');
    const before = stack.sms.messages.length;
    const add = await reader.request('PUT', `/v1/mobile/later?messageId=${first}`, {
      body: { mobile: '+41 79 111 55 55' },
    });
    assert.equal(add.status, 202, JSON.stringify(add.body));
    const smsCodeToNew = await nextCode(stack.sms, '+41791115555', before);
    const wrong = String((Number(smsCodeToNew) + 1) % 1_000_000).padStart(6, '0');
    const refused = await reader.request('POST', `/v1/mobile/later/verify?messageId=${first}`, {
      body: { code: wrong },
    });
    assert.equal(refused.body.errorCode, 'incorrect_code');
    mails = stack.sink.messages.length;
    const confirmed = await reader.request('POST', `/v1/mobile/later/verify?messageId=${first}`, {
      body: { code: smsCodeToNew },
    });
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.equal(confirmed.body.appliesTo, 'later');
    await stack.sink.waitUntil(
      () => stack.sink.messages.slice(mails).some((m) => m.to.includes(ERIN) && /mobile number/.test(m.raw.toString())),
      20_000,
      'the notice to the address',
    );

    // Never the message being read: it still signs in by email.
    assert.equal((await sealedRecipient(stack.sealpost.urls.seal, first, ERIN)).method, 'email');
    const next = await sealTo(stack, { email: ERIN }, 'Protected now');
    const recorded = await sealedRecipient(stack.sealpost.urls.seal, next, ERIN);
    assert.equal(recorded.method, 'sms');
    assert.equal(recorded.mobileSource, 'confirmed');
    const other = new Reader(stack.sealpost.urls.auth);
    await other.get(`/v1/config?messageId=${next}`);
    const byEmail = await other.request('POST', '/v1/auth/code', {
      body: { messageId: next, email: ERIN, method: 'email' },
    });
    assert.equal(byEmail.body.errorCode, 'forbidden_auth_method', 'the next message asks for an SMS');
    await signInBySms(stack, next, ERIN, '+41791115555');
  });
});

describe('SIGN_IN_REQUIRE_SMS=true (real stack)', () => {
  const stack = useStack('contacts-require', { SIGN_IN_REQUIRE_SMS: 'true' });
  const LISTED = 'listed@example.com';
  const UNKNOWN = 'unknown@example.com';

  before(async () => {
    const imported = await importCsv(stack.sealpost.urls.seal, `email,mobile\n${LISTED},+41791117777\n`);
    assert.equal(imported.body.imported, 1);
    // JSON from Dana is sealed (the starter rules relay JSON, the recipients' replies, which need no number).
    const rule = await fetch(`${stack.sealpost.urls.exchange}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'seal JSON from Dana',
        priority: 10,
        configuration: { params: { channel: 'json', sender: 'dana@sender.example' }, outbound: ['seal'] },
      }),
    });
    assert.equal(rule.status, 201);
  });

  it('refuses over SMTP a mail to an unknown recipient, the 5.x.x reply naming them, and seals nothing', async () => {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: stack.sealpost.ports.smtp,
      secure: false,
      ignoreTLS: true,
    });
    try {
      const before = stack.sink.messages.length;
      await assert.rejects(
        transport.sendMail({ from: SENDER, to: [LISTED, UNKNOWN], subject: 'Refused', text: 'No.' }),
        (error: { responseCode?: number; response?: string }) => {
          assert.equal(error.responseCode, 550);
          assert.match(error.response ?? '', /5\.7\.1 No mobile number for unknown@example\.com:/);
          assert.doesNotMatch(error.response ?? '', /listed@example\.com/);
          return true;
        },
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(stack.sink.messages.length, before, 'no notification went out');
      // A listed recipient (the directory) and one given a header number are taken.
      await sendSealedMail(stack.sealpost.ports.smtp, [{ email: LISTED }, { email: UNKNOWN, mobile: '+41791118888' }], {
        subject: 'Taken',
        text: 'Yes.',
      });
      await readerLink(stack.sink, UNKNOWN, before);
    } finally {
      transport.close();
    }
  });

  it('refuses over JSON with 400 mobile_required naming the recipient', async () => {
    const response = await fetch(`${stack.sealpost.urls.exchange}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'dana@sender.example', to: [UNKNOWN], subject: 'Refused', text: 'No.' }),
    });
    const body = (await response.json()) as { errorCode: string; recipients: string[] };
    assert.equal(response.status, 400);
    assert.equal(body.errorCode, 'mobile_required');
    assert.deepEqual(body.recipients, [UNKNOWN]);
    const metrics = await (await fetch(`${stack.sealpost.metricsUrl}/metrics`)).text();
    assert.match(metrics, /exchange_mobile_required_total\{[^}]*channel="json"[^}]*\} 1\b/);
    assert.match(metrics, /exchange_mobile_required_total\{[^}]*channel="smtp"[^}]*\} 1\b/);
    const given = await fetch(`${stack.sealpost.urls.exchange}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        from: 'dana@sender.example',
        to: [UNKNOWN],
        subject: 'Taken',
        text: 'Yes.',
        recipients: [{ email: UNKNOWN, mobile: '+41791118888' }],
      }),
    });
    assert.equal(given.status, 202);
  });
});
