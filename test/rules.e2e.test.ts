import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import { Reader } from './support/auth-reader.ts';
import { startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmtpSink, type SinkMessage, type SmtpSink } from './support/smtp-sink.ts';

/**
 * The rules organisations decide by, on the real stack (SMTP in, seal service, reader, SMTP out to a sink):
 * a subject tag that is stripped, recipients outside the organisation split from one transaction, a header.
 */

const ADMIN_TOKEN = 'rules-e2e-admin-token-0123456789abcdef';
const SERVICE_TOKEN = 'rules-e2e-service-token-0123456789abcdef';
const DOMAIN = 'org.example';

const isNotification = (m: SinkMessage) => /^X-Sealpost-Sealed-Id:/im.test(head(m));
const head = (m: SinkMessage) => {
  const text = m.raw.toString('utf8');
  return text.slice(0, text.indexOf('\r\n\r\n'));
};
const subjectOf = (m: SinkMessage) => /^Subject: (.*(?:\r\n[ \t].*)*)/im.exec(head(m))?.[1]?.replace(/\r\n/g, '');

describe('delivery rules by subject tag, recipient domain and header, on the real stack', { timeout: 300_000 }, () => {
  let dir: string;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let mail: Transporter;

  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${sealpost.urls.exchange}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: response.status === 204 ? null : await response.json() };
  };

  /** Replaces every rule (the embedded default's starter rules included) with these, in this order. */
  async function useRules(rules: Array<{ name: string; params?: object; outbound: string[]; strip?: boolean }>) {
    for (const rule of (await admin('GET', '/v1/config')).body.rules) {
      assert.equal((await admin('DELETE', `/v1/config/${rule.id}`)).status, 204);
    }
    for (const [index, rule] of rules.entries()) {
      const created = await admin('POST', '/v1/config', {
        name: rule.name,
        priority: index + 1,
        configuration: {
          params: { channel: 'smtp', ...rule.params },
          outbound: rule.outbound,
          ...(rule.strip ? { stripSubjectTag: true } : {}),
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
  }

  /** Sends one message in one SMTP transaction; the reply to its DATA. */
  async function send(to: string[], subject: string, headers: Record<string, string> = {}): Promise<string> {
    const info = await mail.sendMail({
      from: `Dana <dana@${DOMAIN}>`,
      to,
      subject,
      text: `About: ${subject}`,
      headers,
    });
    return info.response ?? '';
  }

  const arrived = (check: (m: SinkMessage) => boolean, what: string) =>
    sink.waitUntil(() => sink.messages.some(check), 60_000, what).then(() => sink.messages.find(check)!);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-rules-e2e-'));
    sink = await startSmtpSink();
    sealpost = await startSealpostProcess(
      {
        SEALPOST_DATA_DIR: join(dir, 'data'),
        ADMIN_TOKEN,
        SERVICE_TOKEN,
        OUTBOUND_SMTP_URL: sink.url,
        NOTIFY_FROM: `Sealpost <no-reply@${DOMAIN}>`,
        AUTH_MAIL_FROM: `Sealpost <no-reply@${DOMAIN}>`,
        DELIVERY_POLL_INTERVAL: '100ms',
        LOG_LEVEL: 'warn',
      },
      { timeoutMs: 60_000 },
    );
    mail = nodemailer.createTransport({ host: '127.0.0.1', port: sealpost.ports.smtp, ignoreTLS: true });
  });
  after(async () => {
    mail?.close();
    await sealpost?.stop();
    await sink?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a tagged mail is sealed, and its notification and reader show the subject without the tag', async () => {
    await useRules([
      { name: 'tag', params: { subjectContains: '[secure]' }, outbound: ['seal'], strip: true },
      { name: 'relay tag', params: { subjectContains: '[minutes]' }, outbound: ['smtp'], strip: true },
      { name: 'everything else', outbound: ['smtp'] },
    ]);
    const alice = 'alice@rcpt.example';
    assert.match(await send([alice], '[Secure] Contract 7'), /^250 /);
    assert.match(await send(['bob@rcpt.example'], 'Plans for Monday'), /^250 /);
    assert.match(await send(['carol@rcpt.example'], 'Board [minutes] March'), /^250 /);

    const notification = await arrived((m) => isNotification(m) && m.to.includes(alice), 'the notification');
    assert.doesNotMatch(notification.raw.toString('utf8'), /secure\]/i, 'the notification shows no tag');
    const relayed = await arrived((m) => m.to.includes('bob@rcpt.example'), 'the untagged mail, relayed');
    assert.equal(isNotification(relayed), false);
    assert.equal(subjectOf(relayed), 'Plans for Monday');
    const minutes = await arrived((m) => m.to.includes('carol@rcpt.example'), 'the relayed tagged mail');
    assert.equal(subjectOf(minutes), 'Board March', 'a relayed copy loses its tag too');
    assert.equal(sink.messages.filter((m) => m.to.includes(alice) && !isNotification(m)).length, 0);

    // Alice signs in with an email code and reads the sealed message: its subject has no tag.
    const sealedId = /\/m\/([0-9a-f-]{36})/.exec(notification.raw.toString().replace(/=\r\n/g, ''))![1]!;
    const reader = new Reader(sealpost.urls.auth);
    await reader.get(`/v1/config?messageId=${sealedId}`);
    const asked = await reader.request('POST', '/v1/auth/code', {
      body: { messageId: sealedId, email: alice, method: 'email' },
    });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const codeMail = await arrived(
      (m) => m.to.includes(alice) && m.raw.toString().includes('Your Sealpost code is'),
      'the code email',
    );
    const code = /Your Sealpost code is (\d+)/.exec(codeMail.raw.toString())![1]!;
    assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
    const message = await reader.get('/v1/message');
    assert.equal(message.status, 200, JSON.stringify(message.body));
    assert.equal(message.body.subject, 'Contract 7');
  });

  it('one transaction to a colleague and a customer: relayed to one, sealed for the other, one 250', async () => {
    await useRules([
      { name: 'outside', params: { recipientDomains: [`!${DOMAIN}`] }, outbound: ['seal'] },
      { name: 'inside', outbound: ['smtp'] },
    ]);
    const colleague = `colleague@${DOMAIN}`;
    const customer = 'customer@example.com';
    const reply = await send([colleague, customer], 'The offer');
    const id = /^250 .*queued as ([0-9a-f-]{36})$/.exec(reply)?.[1];
    assert.ok(id, reply);

    const relayed = await arrived((m) => m.to.includes(colleague), 'the colleague’s relayed copy');
    assert.deepEqual(relayed.to, [colleague], 'the relayed copy goes to the colleague only');
    assert.equal(isNotification(relayed), false);
    const notification = await arrived((m) => isNotification(m) && m.to.includes(customer), 'the notification');
    assert.deepEqual(notification.to, [customer]);
    assert.equal(
      sink.messages.filter((m) => m.to.includes(customer) && !isNotification(m)).length,
      0,
      'nothing relayed to the customer',
    );

    // The history of each part names the split; the client's id is the first part's.
    const history = async (envelope: string) => {
      const response = await fetch(`${sealpost.urls.exchange}/v1/messages/${envelope}/status`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(response.status, 200);
      return (await response.json()) as { statuses: Array<{ status: string; detail: string | null }> };
    };
    const first = await history(id);
    const accepted = first.statuses.find((s) => s.status === 'accepted')!.detail!;
    assert.match(accepted, new RegExp(`part 1 of 2 of message ${id}, split by rule \\(envelopes ${id}, `));
    assert.match(first.statuses.find((s) => s.status === 'routed')!.detail!, /by rule "inside" to smtp/);
    const second = /envelopes [0-9a-f-]{36}, ([0-9a-f-]{36})\)/.exec(accepted)![1]!;
    const other = await history(second);
    assert.match(other.statuses.find((s) => s.status === 'accepted')!.detail!, /part 2 of 2 of message /);
    assert.match(other.statuses.find((s) => s.status === 'routed')!.detail!, /by rule "outside" to seal/);
  });

  it('a header rule takes a mail carrying the header', async () => {
    await useRules([
      { name: 'add-in', params: { header: { name: 'X-Sealpost-Seal', value: 'yes' } }, outbound: ['seal'] },
      { name: 'everything else', outbound: ['smtp'] },
    ]);
    assert.match(await send(['erin@rcpt.example'], 'Marked', { 'x-sealpost-seal': 'yes' }), /^250 /);
    assert.match(await send(['frank@rcpt.example'], 'Not marked', { 'X-Sealpost-Seal': 'no' }), /^250 /);
    await arrived((m) => isNotification(m) && m.to.includes('erin@rcpt.example'), 'the notification to Erin');
    const relayed = await arrived((m) => m.to.includes('frank@rcpt.example'), 'the relayed mail to Frank');
    assert.equal(isNotification(relayed), false);
    assert.equal(sink.messages.filter((m) => m.to.includes('erin@rcpt.example') && !isNotification(m)).length, 0);
  });
});
