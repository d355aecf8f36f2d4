import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import nodemailer from 'nodemailer';
import { Reader } from './support/auth-reader.ts';
import { generateDkimKey } from './support/dkim-keys.ts';
import { startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmtpSink, type SinkMessage, type SmtpSink } from './support/smtp-sink.ts';

/**
 * Every signature Sealpost makes verifies, in two verifiers that share no code: mailauth (which the signer
 * uses too) and Python's dkimpy. 1,000 mails through the real stack, 500 signed with RSA and 500 with Ed25519:
 * notifications, an email code, replies, bounces, and bounces that had to be re-encoded to 7-bit because the
 * relay offers neither 8BITMIME nor SMTPUTF8. One signature in ~200 once failed (a second passing between the
 * two clock readings of one signature); bounces re-encoded after signing failed every time.
 */

const run = promisify(execFile);
const DOMAIN = 'example.org';
const ADMIN_TOKEN = 'dkim-signatures-admin-token-0123456789';
const SERVICE_TOKEN = 'dkim-signatures-service-token-0123456789';
const ALICE = 'alice@rcpt.example';
/** Per key: sealed messages (a notification and a reply each), ASCII bounces, bounces with UTF-8 headers. */
const SEALED = 125;
const BOUNCES = 125;
const UTF8_BOUNCES = 125;

/** The TXT records the verifiers see, by name. */
const dns = new Map<string, string>();

async function generateKey(dir: string, selector: string, type: 'rsa' | 'ed25519'): Promise<string> {
  const { file, record } = await generateDkimKey(dir, DOMAIN, selector, type);
  dns.set(`${selector}._domainkey.${DOMAIN}`, record);
  return file;
}

async function mailauthVerdict(raw: Buffer): Promise<string> {
  const result = await dkimVerify(raw, {
    resolver: (async (name: string) => {
      const record = dns.get(name.toLowerCase().replace(/\.$/, ''));
      if (record) return [[record]];
      throw Object.assign(new Error(`no record for ${name}`), { code: 'ENOTFOUND' });
    }) as never,
  });
  return result.results.map((r: { status: { result: string } }) => r.status.result).join(',') || 'none';
}

/** dkimpy (Debian's python3-dkim) over every file in `dir`, with the test's DNS: one verdict per file. */
const PYTHON_VERIFIER = `
import dkim, json, os, sys
folder = sys.argv[1]
records = json.load(open(os.path.join(folder, 'dns.json')))
def txt(name, timeout=5):
    return records.get(name.decode().rstrip('.').lower(), '').encode() or None
verdicts = {}
for name in sorted(os.listdir(folder)):
    if name.endswith('.eml'):
        verdicts[name] = bool(dkim.verify(open(os.path.join(folder, name), 'rb').read(), dnsfunc=txt))
print(json.dumps(verdicts))
`;

async function dkimpyVerdicts(messages: Buffer[], dir: string): Promise<boolean[]> {
  await writeFile(join(dir, 'dns.json'), JSON.stringify(Object.fromEntries(dns)));
  await Promise.all(messages.map((raw, index) => writeFile(join(dir, `${String(index).padStart(5, '0')}.eml`), raw)));
  const { stdout } = await run('/usr/bin/python3', ['-c', PYTHON_VERIFIER, dir], { maxBuffer: 16 * 1024 * 1024 });
  const verdicts = JSON.parse(stdout) as Record<string, boolean>;
  return messages.map((_, index) => verdicts[`${String(index).padStart(5, '0')}.eml`] ?? false);
}

type Kind = 'notification' | 'email code' | 'reply' | 'bounce' | 're-encoded bounce';

function kindOf(message: SinkMessage): Kind | 'other' {
  const text = message.raw.toString('latin1');
  const head = text.slice(0, text.indexOf('\r\n\r\n'));
  if (/^X-Sealpost-Sealed-Id:/im.test(head)) return 'notification';
  if (text.includes('Your Sealpost code is')) return 'email code';
  if (message.from === `replies@${DOMAIN}`) return 'reply';
  if (message.from === '' && /report-type="?(global-)?delivery-status/i.test(head)) {
    return /^Content-Transfer-Encoding: (base64|quoted-printable)/im.test(text) ? 're-encoded bounce' : 'bounce';
  }
  return 'other';
}

describe('1,000 signed mails, verified by mailauth and by dkimpy', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-dkim-1000-'));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const type of ['rsa', 'ed25519'] as const) {
    it(`every ${type} signature verifies: notifications, a code, replies, bounces, re-encoded bounces`, async (t) => {
      const data = join(dir, type);
      const keyFile = await generateKey(dir, `s-${type}`, type);
      // An old relay: no 8BITMIME, no SMTPUTF8. nobody@ is refused for good, so what is sent there bounces.
      const sink: SmtpSink = await startSmtpSink({
        hide8BITMIME: true,
        hideSMTPUTF8: true,
        failWith: (recipient) => (recipient.startsWith('nobody@') ? 550 : undefined),
      });
      let sealpost: SealpostProcess | undefined;
      try {
        sealpost = await startSealpostProcess(
          {
            SEALPOST_DATA_DIR: data,
            ADMIN_TOKEN,
            SERVICE_TOKEN,
            OUTBOUND_SMTP_URL: sink.url,
            NOTIFY_FROM: `Sealpost <no-reply@${DOMAIN}>`,
            AUTH_MAIL_FROM: `Sealpost <no-reply@${DOMAIN}>`,
            REPLY_FROM: `Example Org <replies@${DOMAIN}>`,
            DKIM_DOMAIN: DOMAIN,
            DKIM_SELECTOR: `s-${type}`,
            DKIM_PRIVATE_KEY_FILE: keyFile,
            DELIVERY_POLL_INTERVAL: '100ms',
            LOG_LEVEL: 'warn',
          },
          { timeoutMs: 60_000 },
        );
        await routes(sealpost);
        const sealedIds = await sealMany(sealpost, sink);
        await replyToEach(sealpost, sink, sealedIds);
        await bounceMany(sealpost);

        const expected = SEALED * 2 + 1 + BOUNCES + UTF8_BOUNCES;
        await sink.waitUntil(() => sink.messages.length >= expected, 180_000, `${expected} mails`);
        const messages = sink.messages.slice();
        const kinds = new Map<string, number>();
        for (const message of messages) kinds.set(kindOf(message), (kinds.get(kindOf(message)) ?? 0) + 1);
        assert.deepEqual(Object.fromEntries(kinds), {
          notification: SEALED,
          'email code': 1,
          reply: SEALED,
          bounce: BOUNCES,
          're-encoded bounce': UTF8_BOUNCES,
        });

        const algorithm = type === 'rsa' ? 'rsa-sha256' : 'ed25519-sha256';
        const failures: string[] = [];
        const python = await dkimpyVerdicts(
          messages.map((m) => m.raw),
          await mkdtemp(join(dir, `${type}-mails-`)),
        );
        for (const [index, message] of messages.entries()) {
          assert.match(message.raw.toString('latin1'), new RegExp(`^DKIM-Signature: v=1; a=${algorithm};`, 'm'));
          const verdict = await mailauthVerdict(message.raw);
          if (verdict !== 'pass' || !python[index]) {
            failures.push(`${kindOf(message)} #${index}: mailauth ${verdict}, dkimpy ${python[index]}`);
          }
        }
        t.diagnostic(
          `${messages.length} ${type} signatures checked twice: ${JSON.stringify(Object.fromEntries(kinds))}`,
        );
        assert.deepEqual(failures, [], `signatures that did not verify, of ${messages.length}`);
      } finally {
        await sealpost?.stop();
        await sink.close();
      }
    });
  }
});

/** SMTP-submitted mail is sealed; JSON mail is relayed (and bounces when the relay refuses it). */
async function routes(sealpost: SealpostProcess): Promise<void> {
  for (const [channel, outbound] of [
    ['smtp', 'seal'],
    ['json', 'smtp'],
  ]) {
    const rule = await fetch(`${sealpost.urls.exchange}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: channel,
        priority: 1,
        configuration: { params: { channel }, outbound: [outbound] },
      }),
    });
    assert.ok(rule.status === 201 || rule.status === 200, await rule.text());
  }
}

/** Seals SEALED messages for Alice; returns their ids, read from the notifications' links. */
async function sealMany(sealpost: SealpostProcess, sink: SmtpSink): Promise<string[]> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: sealpost.ports.smtp, ignoreTLS: true });
  try {
    for (let i = 0; i < SEALED; i++) {
      await transport.sendMail({
        from: 'Dana Sender <dana@sender.example>',
        to: ALICE,
        subject: `Contract ${i}`,
        text: `Sealed contract number ${i}.`,
      });
    }
  } finally {
    transport.close();
  }
  const notification = (m: SinkMessage) => kindOf(m) === 'notification';
  await sink.waitUntil(() => sink.messages.filter(notification).length >= SEALED, 120_000, 'the notifications');
  return sink.messages
    .filter(notification)
    .map((m) => /\/m\/([0-9a-f-]{36})/.exec(m.raw.toString().replace(/=\r\n/g, ''))![1]!);
}

/** Alice signs in once with an email code and replies to every message. */
async function replyToEach(sealpost: SealpostProcess, sink: SmtpSink, sealedIds: string[]): Promise<void> {
  const alice = new Reader(sealpost.urls.auth);
  await alice.get(`/v1/config?messageId=${sealedIds[0]}`);
  const asked = await alice.request('POST', '/v1/auth/code', {
    body: { messageId: sealedIds[0], email: ALICE, method: 'email' },
  });
  assert.equal(asked.status, 200, JSON.stringify(asked.body));
  await sink.waitUntil(() => sink.messages.some((m) => kindOf(m) === 'email code'), 30_000, 'the code email');
  const code = /Your Sealpost code is (\d+)/.exec(
    sink.messages.find((m) => kindOf(m) === 'email code')!.raw.toString(),
  )![1]!;
  assert.equal((await alice.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
  for (const [index, id] of sealedIds.entries()) {
    const sent = await alice.request('POST', `/v1/message/reply?messageId=${id}`, {
      body: { text: `Signed and returned, number ${index}.` },
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
  }
}

/** Relayed mail the relay refuses: ASCII, and with a UTF-8 Subject that the bounce returns (8-bit). */
async function bounceMany(sealpost: SealpostProcess): Promise<void> {
  const post = async (body: unknown) => {
    const response = await fetch(`${sealpost.urls.exchange}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 202, await response.text());
  };
  for (let i = 0; i < BOUNCES; i++) {
    await post({ from: 'dana@sender.example', to: ['nobody@rcpt.example'], subject: `Will bounce ${i}`, text: 'x' });
  }
  for (let i = 0; i < UTF8_BOUNCES; i++) {
    const raw =
      `From: Dana <dana@sender.example>\r\nTo: nobody@rcpt.example\r\nSubject: Größe ${i} – Über\r\n` +
      `Date: Mon, 07 Dec 2026 10:00:00 +0000\r\nMessage-ID: <utf8-${i}@sender.example>\r\n` +
      'MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n' +
      'Grüße aus Zürich.\r\n';
    await post({ from: 'dana@sender.example', to: ['nobody@rcpt.example'], raw: Buffer.from(raw).toString('base64') });
  }
}
