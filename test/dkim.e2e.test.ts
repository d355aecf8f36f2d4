import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authenticate } from 'mailauth';
import nodemailer from 'nodemailer';
import { DkimSigner } from '../src/kernel/dkim.ts';
import { Reader } from './support/auth-reader.ts';
import { generateDkimKey } from './support/dkim-keys.ts';
import { startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmtpSink, type SinkMessage, type SmtpSink } from './support/smtp-sink.ts';

const ADMIN_TOKEN = 'dkim-admin-token-0123456789abcdef';
const SERVICE_TOKEN = 'dkim-service-token-0123456789abcdef';
const DOMAIN = 'example.org';

/** DNS as the verifier sees it: the test's DKIM keys, a DMARC policy of p=reject and SPF for 127.0.0.1. */
const dns = new Map<string, string[][]>([
  [`_dmarc.${DOMAIN}`, [['v=DMARC1; p=reject; adkim=r; aspf=r']]],
  [DOMAIN, [['v=spf1 ip4:127.0.0.1 -all']]],
]);
async function resolver(name: string, type: string): Promise<unknown> {
  const records = type === 'TXT' ? dns.get(name.toLowerCase().replace(/\.$/, '')) : undefined;
  if (records) return records;
  throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
}

/** mailauth's verdict on the bytes a relay received from 127.0.0.1. */
async function verify(raw: Buffer, sender: string) {
  return authenticate(raw, {
    resolver: resolver as never,
    ip: '127.0.0.1',
    helo: 'sealpost.test',
    sender,
    mta: 'sink.test',
    disableArc: true,
  });
}
const dkimResult = async (raw: Buffer, sender = `no-reply@${DOMAIN}`) => {
  const result = await verify(raw, sender);
  return result.dkim.results.map((r) => `${r.signingDomain}:${r.status.result}`).join(',');
};
/**
 * A signature that no longer verifies: `fail` (the header hash) or `neutral` (mailauth's verdict when
 * the body hash no longer matches, RFC 6376 §6.1.3 step 9), never `pass`.
 */
const BROKEN = new RegExp(`^${DOMAIN.replace('.', '\\.')}:(fail|neutral)$`);

/** Writes a key with `sealpost dkim-key generate` and publishes the TXT record it prints. */
async function generateKey(dir: string, selector: string, type: 'rsa' | 'ed25519'): Promise<string> {
  const { file, record } = await generateDkimKey(dir, DOMAIN, selector, type);
  dns.set(`${selector}._domainkey.${DOMAIN}`, [[record]]);
  return file;
}

/** The same message with one byte of its body changed, or its Subject: a signature must not hold. */
function altered(raw: Buffer, where: 'body' | 'subject'): Buffer {
  const text = raw.toString('latin1');
  if (where === 'subject') return Buffer.from(text.replace(/^Subject: /m, 'Subject: FWD '), 'latin1');
  const split = text.indexOf('\r\n\r\n') + 4;
  const at = text.indexOf('a', split);
  return Buffer.from(`${text.slice(0, at)}b${text.slice(at + 1)}`, 'latin1');
}

describe('DKIM-signed mail, verified by mailauth over a real SMTP hop', () => {
  let dir: string;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-dkim-'));
    const keyFile = await generateKey(dir, 'sealpost', 'rsa');
    // nobody@ is refused by the relay: a reply to it bounces.
    sink = await startSmtpSink({ failWith: (recipient) => (recipient.startsWith('nobody@') ? 550 : undefined) });
    sealpost = await startSealpostProcess(
      {
        SEALPOST_DATA_DIR: dir,
        ADMIN_TOKEN,
        SERVICE_TOKEN,
        OUTBOUND_SMTP_URL: sink.url,
        NOTIFY_FROM: `Sealpost <no-reply@${DOMAIN}>`,
        AUTH_MAIL_FROM: `Sealpost <no-reply@${DOMAIN}>`,
        REPLY_FROM: `Example Org <replies@${DOMAIN}>`,
        DKIM_DOMAIN: DOMAIN,
        DKIM_SELECTOR: 'sealpost',
        DKIM_PRIVATE_KEY_FILE: keyFile,
        DELIVERY_POLL_INTERVAL: '100ms',
      },
      { timeoutMs: 60_000 },
    );
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
  });

  after(async () => {
    await sealpost?.stop();
    await sink?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const waitFor = async (what: string, match: (m: SinkMessage) => boolean): Promise<SinkMessage> => {
    await sink.waitUntil(() => sink.messages.some(match), 30_000, what);
    return sink.messages.find(match)!;
  };

  async function sealFor(to: string, subject: string): Promise<string> {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: sealpost.ports.smtp,
      secure: false,
      ignoreTLS: true,
    });
    try {
      await transport.sendMail({
        from: 'Dana Sender <dana@sender.example>',
        to,
        subject,
        text: 'A sealed contract, please sign.',
      });
    } finally {
      transport.close();
    }
    const notice = await waitFor(
      `the notification to ${to}`,
      (m) => m.to.includes(to) && /^X-Sealpost-Sealed-Id:/im.test(m.raw.toString()),
    );
    return /\/m\/([0-9a-f-]{36})/.exec(notice.raw.toString().replace(/=\r\n/g, ''))![1]!;
  }

  it('signs notifications, email codes, replies and bounces; any change after signing fails', async (t) => {
    const messageId = await sealFor('alice@rcpt.example', 'Contract');
    const notice = await waitFor(
      'the notification',
      (m) => m.to.includes('alice@rcpt.example') && /^X-Sealpost-Sealed-Id:/im.test(m.raw.toString()),
    );
    assert.equal(await dkimResult(notice.raw), `${DOMAIN}:pass`, 'the notification');
    assert.match(await dkimResult(altered(notice.raw, 'body')), BROKEN, 'the notification, one body byte changed');
    assert.match(await dkimResult(altered(notice.raw, 'subject')), BROKEN, 'the notification, its Subject changed');
    assert.match(notice.raw.toString(), /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=example\.org;/m);

    // The email code (auth), then a reply, signed in with it.
    const alice = new Reader(sealpost.urls.auth);
    await alice.get(`/v1/config?messageId=${messageId}`);
    const before = sink.messages.length;
    assert.equal(
      (
        await alice.request('POST', '/v1/auth/code', {
          body: { messageId, email: 'alice@rcpt.example', method: 'email' },
        })
      ).status,
      200,
    );
    const codeMail = await waitFor(
      'the code email',
      (m) => sink.messages.indexOf(m) >= before && m.raw.includes('Your Sealpost code is'),
    );
    assert.equal(await dkimResult(codeMail.raw), `${DOMAIN}:pass`, 'the email code');
    assert.match(await dkimResult(altered(codeMail.raw, 'subject')), BROKEN, 'the email code, its Subject changed');
    const code = /Your Sealpost code is (\d+)/.exec(codeMail.raw.toString())![1]!;
    assert.equal((await alice.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);

    const sent = await alice.request('POST', '/v1/message/reply', {
      body: { text: 'Signed and returned, thank you.' },
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const reply = await waitFor('the reply', (m) => m.messageId === sent.body.messageId);
    assert.equal(reply.from, `replies@${DOMAIN}`, 'the envelope sender is the organisation (SPF aligns)');
    const verdict = await verify(reply.raw, reply.from);
    assert.equal(verdict.dkim.results[0]?.status.result, 'pass', 'the reply is signed');
    assert.equal(
      (verdict.dmarc || undefined)?.status.result,
      'pass',
      'the reply passes DMARC for a domain with p=reject',
    );
    assert.equal((verdict.spf || undefined)?.status.result, 'pass');
    const header = reply.raw.toString().split('\r\n\r\n')[0]!;
    assert.match(header, /^Reply-To: alice@rcpt\.example$/m, 'answers go to the recipient');
    assert.match(header, /^From: "alice@rcpt\.example via Example Org" <replies@example\.org>$/m);
    assert.match(await dkimResult(altered(reply.raw, 'body'), reply.from), BROKEN, 'the reply, one body byte changed');
    t.diagnostic(`reply as received:\n${header}`);

    // A bounce: the JSON channel relays a message the relay refuses for good.
    const refused = await fetch(`${sealpost.urls.exchange}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        from: 'dana@sender.example',
        to: ['nobody@rcpt.example'],
        subject: 'Will bounce',
        text: 'x',
      }),
    });
    assert.equal(refused.status, 202);
    const bounce = await waitFor('the bounce', (m) => m.from === '' && m.to.includes('dana@sender.example'));
    assert.equal(await dkimResult(bounce.raw, ''), `${DOMAIN}:pass`, 'the bounce');
    assert.match(await dkimResult(altered(bounce.raw, 'body'), ''), BROKEN, 'the bounce, one body byte changed');
  });

  it('signs with an Ed25519 key as ed25519-sha256 (RFC 8463)', async () => {
    const signer = await DkimSigner.load({
      domain: DOMAIN,
      selector: 'ed',
      keyFile: await generateKey(dir, 'ed', 'ed25519'),
    });
    assert.equal(signer.algorithm, 'ed25519-sha256');
    const message = Buffer.from(
      `From: no-reply@${DOMAIN}\r\nTo: alice@rcpt.example\r\nSubject: Ed25519\r\n` +
        `Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <ed@${DOMAIN}>\r\n\r\nA signed line.\r\n`,
    );
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: sink.port,
      secure: false,
      ignoreTLS: true,
    });
    try {
      await transport.sendMail({
        envelope: { from: `no-reply@${DOMAIN}`, to: ['alice@rcpt.example'] },
        raw: await signer.sign(message),
      });
    } finally {
      transport.close();
    }
    const received = await waitFor('the Ed25519-signed message', (m) => m.messageId === `<ed@${DOMAIN}>`);
    assert.match(received.raw.toString(), /a=ed25519-sha256/);
    assert.equal(await dkimResult(received.raw), `${DOMAIN}:pass`);
    assert.match(await dkimResult(altered(received.raw, 'body')), BROKEN);
  });
});
