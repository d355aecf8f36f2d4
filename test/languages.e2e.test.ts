import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import nodemailer from 'nodemailer';
import { Reader } from './support/auth-reader.ts';
import { startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.ts';

const ADMIN_TOKEN = 'languages-admin-token-0123456789abcdef';
const SERVICE_TOKEN = 'languages-service-token-0123456789abcdef';

/** What each language's notification and code email must say (a phrase from its own texts file). */
const EXPECTED = {
  en: {
    subject: /^A sealed message from dana@sender\.example is waiting for you$/,
    code: /^Your Sealpost code$/,
    body: /Your Sealpost code is (\d+)/,
  },
  de: {
    subject: /^Eine versiegelte Nachricht von dana@sender\.example wartet auf Sie$/,
    code: /^Ihr Sealpost-Code$/,
    body: /Ihr Sealpost-Code lautet (\d+)/,
  },
  fr: {
    subject: /^Un message scellé de dana@sender\.example vous attend$/,
    code: /^Votre code Sealpost$/,
    body: /Votre code Sealpost est (\d+)/,
  },
  it: {
    subject: /^Un messaggio sigillato di dana@sender\.example la sta aspettando$/,
    code: /^Il suo codice Sealpost$/,
    body: /Il suo codice Sealpost è (\d+)/,
  },
} as const;

/**
 * Notifications and email codes in the recipient's language, through `sealpost start all` with a real
 * SMTP hop to the sink: the JSON channel's `recipients[].language`, the SMTP header
 * `X-Sealpost-Language`, and NOTIFY_DEFAULT_LANGUAGE (Italian here) for a recipient given none.
 */
describe("notifications and email codes in the reader's language", () => {
  let dataDir: string;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sealpost-languages-'));
    sink = await startSmtpSink();
    sealpost = await startSealpostProcess(
      {
        SEALPOST_DATA_DIR: dataDir,
        ADMIN_TOKEN,
        SERVICE_TOKEN,
        OUTBOUND_SMTP_URL: sink.url,
        NOTIFY_DEFAULT_LANGUAGE: 'it',
        DELIVERY_POLL_INTERVAL: '100ms',
      },
      { timeoutMs: 60_000 },
    );
    for (const channel of ['json', 'smtp']) {
      const rule = await fetch(`${sealpost.urls.exchange}/v1/config`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `seal ${channel}`,
          priority: 1,
          configuration: { params: { channel }, outbound: ['seal'] },
        }),
      });
      assert.ok(rule.status === 201 || rule.status === 200, await rule.text());
    }
  });

  after(async () => {
    await sealpost?.stop();
    await sink?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function notificationTo(address: string): Promise<ParsedMail> {
    const isNotice = (m: SmtpSink['messages'][number]) =>
      m.to.includes(address) && /X-Sealpost-Sealed-Id/i.test(m.raw.toString());
    await sink.waitUntil(() => sink.messages.some(isNotice), 30_000, `the notification to ${address}`);
    return simpleParser(sink.messages.find(isNotice)!.raw);
  }

  it('writes notifications in the language of each recipient, else NOTIFY_DEFAULT_LANGUAGE; links it', async (t) => {
    const accepted = await fetch(`${sealpost.urls.exchange}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        from: 'Dana Sender <dana@sender.example>',
        to: ['en@rcpt.example', 'de@rcpt.example', 'fr@rcpt.example', 'default@rcpt.example'],
        subject: 'Quarterly figures',
        text: 'The figures.',
        recipients: [
          { email: 'en@rcpt.example', language: 'en' },
          { email: 'de@rcpt.example', language: 'de' },
          { email: 'fr@rcpt.example', language: 'fr', mobile: '+41 79 123 45 67' },
        ],
      }),
    });
    assert.equal(accepted.status, 202, await accepted.text());
    // The SMTP channel names the language in a header; a regional tag picks its language.
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: sealpost.ports.smtp,
      secure: false,
      ignoreTLS: true,
    });
    try {
      await transport.sendMail({
        from: 'dana@sender.example',
        to: 'swiss@rcpt.example',
        subject: 'Over SMTP',
        text: 'The figures.',
        headers: { 'X-Sealpost-Language': 'swiss@rcpt.example=de-CH' },
      });
    } finally {
      transport.close();
    }

    const cases = [
      ['en@rcpt.example', 'en'],
      ['de@rcpt.example', 'de'],
      ['fr@rcpt.example', 'fr'],
      ['default@rcpt.example', 'it'],
      ['swiss@rcpt.example', 'de'],
    ] as const;
    for (const [address, language] of cases) {
      const notice = await notificationTo(address);
      assert.match(notice.subject ?? '', EXPECTED[language].subject, address);
      assert.equal(notice.headers.get('content-language'), language, address);
      const link = /https?:\/\/\S+\/m\/[0-9a-f-]{36}(?:\?lang=([a-z]+))?/.exec(notice.text ?? '');
      // Only a chosen language goes into the link: for the default, the reader page follows the browser's.
      const named = address === 'default@rcpt.example' ? undefined : language;
      assert.equal(link?.[1], named, `the reader link of ${address} names its language:\n${notice.text}`);
      assert.match(notice.html || '', new RegExp(`<html lang="${language}">`));
      if (address !== 'swiss@rcpt.example')
        t.diagnostic(`notification in ${language} to ${address}:\nSubject: ${notice.subject}\n${notice.text}`);
    }
    assert.match(
      (await notificationTo('fr@rcpt.example')).text ?? '',
      /par SMS/,
      'the French recipient with a mobile number is told of the SMS code',
    );
  });

  it("sends the email code in the recipient's language", async () => {
    for (const [address, language] of [
      ['de@rcpt.example', 'de'],
      ['default@rcpt.example', 'it'],
    ] as const) {
      const notice = await notificationTo(address);
      const messageId = /\/m\/([0-9a-f-]{36})/.exec(notice.text ?? '')![1]!;
      const reader = new Reader(sealpost.urls.auth);
      assert.equal((await reader.get(`/v1/config?messageId=${messageId}`)).status, 200);
      const before = sink.messages.length;
      const sent = await reader.request('POST', '/v1/auth/code', {
        body: { messageId, email: address, method: 'email' },
      });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      await sink.waitUntil(
        () => sink.messages.slice(before).some((m) => m.to.includes(address)),
        10_000,
        `the code email to ${address}`,
      );
      const mail = await simpleParser(sink.messages.slice(before).find((m) => m.to.includes(address))!.raw);
      assert.match(mail.subject ?? '', EXPECTED[language].code);
      const code = EXPECTED[language].body.exec(mail.text ?? '')?.[1];
      const verified = await reader.request('POST', '/v1/auth/verify', { body: { code } });
      assert.equal(verified.status, 200, `the ${language} code signs in: ${JSON.stringify(verified.body)}`);
    }
  });
});
