import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../cli/config.ts';
import { ConfigError } from '../../kernel/config.ts';
import { createLogger } from '../../kernel/logger.ts';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, BOB, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import { startSmsCapture, type SmsCapture } from '../../../test/support/sms-capture.ts';
import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink.ts';
import { resolveAuthSecret } from '../secret.ts';
import { createSmsProvider } from './index.ts';
import type { SignInMethodName } from '../../contracts/seal.ts';

const TWILIO_SID = 'AC0123456789abcdef0123456789abcdef';

async function requestSmsCode(
  harness: AuthHarness,
  who: { email: string; mobile?: string; method: SignInMethodName } = ALICE,
) {
  const record = harness.sealSample();
  const reader = harness.reader();
  await reader.get(`/v1/config?messageId=${record.id}`);
  const response = await reader.request('POST', '/v1/auth/code', { body: { messageId: record.id, ...who } });
  return { reader, response };
}

describe('SMS provider: twilio', () => {
  let sms: SmsCapture;
  let harness: AuthHarness;
  before(async () => {
    sms = await startSmsCapture();
    harness = await startAuthHarness({
      sms,
      env: {
        SMS_PROVIDER: 'twilio',
        SMS_PROVIDER_URL: sms.url,
        SMS_PROVIDER_USER: TWILIO_SID,
        SMS_PROVIDER_PASSWORD: 'twilio-token',
        SMS_SENDER: '+15005550006',
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
      },
    });
  });
  after(async () => {
    await harness?.stop();
    await sms?.close();
  });

  it("posts Twilio's Messages API form with the account SID and token, and signs in with the code", async () => {
    const { reader, response } = await requestSmsCode(harness);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const sent = sms.messages.at(-1)!;
    assert.deepEqual(
      [sent.format, sent.path, sent.accountSid, sent.user, sent.password, sent.to, sent.from, sent.contentType],
      [
        'twilio',
        `/2010-04-01/Accounts/${TWILIO_SID}/Messages.json`,
        TWILIO_SID,
        TWILIO_SID,
        'twilio-token',
        ALICE.mobile,
        '+15005550006',
        'application/x-www-form-urlencoded',
      ],
    );
    assert.match(sent.text, /^Your Sealpost code is \d{6}$/);
    assert.equal(
      (await reader.request('POST', '/v1/auth/verify', { body: { code: sms.lastCodeTo(ALICE.mobile) } })).status,
      200,
    );
  });

  it('answers 502 with an error object when Twilio refuses', async () => {
    sms.failWith(401);
    try {
      assertError((await requestSmsCode(harness)).response, 502, 'upstream_failed');
    } finally {
      sms.failWith(undefined);
    }
  });
});

describe('SMS provider: http, with a custom text', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({
      env: { SMS_TEXT: '{code} is your code. Sealpost', SMS_PROVIDER_USER: 'u', SMS_PROVIDER_PASSWORD: 'p:w' },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  it('fills SMS_TEXT and sends Basic auth with the configured user and password', async () => {
    const { response } = await requestSmsCode(harness);
    assert.equal(response.status, 200);
    const sms = harness.sms.messages.at(-1)!;
    assert.match(sms.text, /^\d{6} is your code\. Sealpost$/);
    assert.deepEqual([sms.user, sms.password], ['u', 'p:w']);
    const log = JSON.stringify(harness.auth.logs);
    assert.ok(!log.includes(sms.text.slice(0, 6)), 'the code is not in the log');
  });
});

describe('SMS provider: log (development)', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness({ env: { SMS_PROVIDER: 'log' } });
  });
  after(async () => {
    await harness?.stop();
  });

  it('writes the SMS, code included, to the log instead of sending it; the code signs in', async () => {
    const before = harness.sms.messages.length;
    const { reader, response } = await requestSmsCode(harness);
    assert.equal(response.status, 200);
    assert.equal(harness.sms.messages.length, before);
    const line = harness.auth.logs.find((entry) => entry.smsTo === ALICE.mobile);
    const code = /Your Sealpost code is (\d{6})/.exec(String(line?.smsText))?.[1] ?? assert.fail('no SMS in the log');
    assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
  });

  it('prints email codes too, so that development needs no inbox', async () => {
    const { response } = await requestSmsCode(harness, BOB);
    assert.equal(response.status, 200);
    assert.ok(
      harness.auth.logs.some(
        (entry) => entry.emailTo === BOB.email && /Your Sealpost code is \d{6}/.test(String(entry.emailText)),
      ),
    );
  });
});

describe('SMS provider and secret: production rules', () => {
  const logger = createLogger({ level: 'silent' });
  const production = {
    NODE_ENV: 'production',
    ADMIN_TOKEN: 'an-admin-token-32-characters-long',
    SERVICE_TOKEN: 'a-service-token-32-characters-long',
  };
  const providerFor = (env: Record<string, string>) => {
    const config = loadConfig(env);
    return createSmsProvider(config.auth.sms, config.production, logger);
  };
  const secretFor = (env: Record<string, string>) => {
    const config = loadConfig(env);
    return resolveAuthSecret(config, config.auth.secret);
  };

  it('refuses the log provider with NODE_ENV=production', () => {
    assert.throws(
      () => providerFor({ ...production, SMS_PROVIDER: 'log' }),
      /SMS_PROVIDER=log .* refused with NODE_ENV=production/,
    );
  });

  it('has no default provider in production', () => {
    assert.throws(() => providerFor(production), /SMS_PROVIDER is not set/);
    assert.equal(providerFor({}).kind, 'log');
  });

  it('needs the URL for http and the account SID and token for twilio', () => {
    assert.throws(() => providerFor({ SMS_PROVIDER: 'http' }), /SMS_PROVIDER_URL/);
    assert.throws(
      () => providerFor({ SMS_PROVIDER: 'twilio', SMS_PROVIDER_USER: TWILIO_SID }),
      /SMS_PROVIDER_PASSWORD/,
    );
  });

  it('needs AUTH_SECRET in production; elsewhere generates one into the data folder once', async () => {
    await assert.rejects(secretFor(production), /AUTH_SECRET is not set/);
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-auth-secret-'));
    try {
      const first = await secretFor({ SEALPOST_DATA_DIR: dataDir });
      const second = await secretFor({ SEALPOST_DATA_DIR: dataDir });
      assert.deepEqual([first.source, second.source], ['generated', 'file']);
      assert.equal(first.secret, second.secret);
      assert.equal((await readFile(join(dataDir, 'auth-secret.key'), 'utf8')).trim(), first.secret);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('rejects an SMS_TEXT without {code}, a short AUTH_SECRET and a bad AUTH_TRUST_PROXY, naming each', () => {
    try {
      loadConfig({ SMS_TEXT: 'Your code', AUTH_SECRET: 'short', AUTH_TRUST_PROXY: 'maybe' });
      assert.fail('expected a ConfigError');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      const text = error.problems.join('\n');
      assert.match(text, /SMS_TEXT="Your code" is not valid: expected a text containing \{code\}/);
      assert.match(text, /AUTH_SECRET=\(value hidden\) is not valid/);
      assert.match(text, /AUTH_TRUST_PROXY="maybe" is not valid/);
    }
    assert.equal(loadConfig({ AUTH_TRUST_PROXY: '2' }).auth.trustProxyHops, 2);
    assert.equal(loadConfig({ AUTH_TRUST_PROXY: 'true' }).auth.trustProxyHops, 1);
    assert.equal(loadConfig({}).auth.trustProxyHops, 0);
  });
});

describe('email codes through the SMTP relay (OUTBOUND_SMTP_URL)', () => {
  let harness: AuthHarness;
  let sink: SmtpSink;
  before(async () => {
    sink = await startSmtpSink();
    harness = await startAuthHarness({
      env: {
        OUTBOUND_SMTP_URL: sink.url,
        AUTH_MAIL_FROM: 'Sealpost <codes@sealpost.example>',
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
      },
    });
  });
  after(async () => {
    await harness?.stop();
    await sink?.close();
  });

  it('sends the code to the address on record and signs in with it; the log shows the address masked', async () => {
    const { reader, response } = await requestSmsCode(harness, { email: 'Bob@Example.com', method: 'email' });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const mail = sink.messages.at(-1)!;
    assert.deepEqual([mail.from, mail.to], ['codes@sealpost.example', [BOB.email]]);
    const code = /Your Sealpost code is (\d{6})/.exec(mail.raw.toString())?.[1] ?? assert.fail('no code in the mail');
    assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
    const log = JSON.stringify(harness.auth.logs);
    assert.ok(!log.includes(code));
    assert.ok(log.includes('b***@example.com'));
  });

  it('answers 502 when the relay refuses, without using up the limit', async () => {
    sink.failWith = () => 451;
    try {
      assertError((await requestSmsCode(harness, BOB)).response, 502, 'upstream_failed');
    } finally {
      sink.failWith = undefined;
    }
    assert.equal((await requestSmsCode(harness, BOB)).response.status, 200);
  });
});
