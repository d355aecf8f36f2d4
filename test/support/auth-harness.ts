import { authService } from '../../src/auth/service.ts';
import { Reader } from './auth-reader.ts';
import { TestClock } from './clock.ts';
import type { S3TestServer } from './s3-server.ts';
import { startSealStandIn, type SealStandIn, type StandInRecord } from './seal-stand-in.ts';
import { startServiceForTest, type ServiceUnderTest } from './services.ts';
import { startSmsCapture, type SmsCapture } from './sms-capture.ts';

export const TEST_AUTH_SECRET = 'test-auth-secret-0123456789abcdef-0123456789';
export const ALICE = { email: 'alice@example.com', method: 'sms' as const, mobile: '+41791234567' };
export const BOB = { email: 'bob@example.com', method: 'email' as const };

export const SAMPLE_MESSAGE = [
  'From: Sender <sender@example.org>',
  'To: Alice <alice@example.com>, bob@example.com',
  'Subject: Contract',
  'Date: Tue, 03 Nov 2026 10:00:00 +0000',
  'X-Sealpost-Mobile: alice@example.com=+41791234567',
  'Message-ID: <contract-1@example.org>',
  'MIME-Version: 1.0',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Please sign the contract.',
  '',
].join('\n');

export interface AuthHarness {
  auth: ServiceUnderTest;
  seal: SealStandIn;
  sms: SmsCapture;
  /** The auth service's clock: advance it to let codes, sessions and drafts expire. */
  clock: TestClock;
  reader(forwardedFor?: string): Reader;
  /** A sealed message for ALICE (sms) and BOB (email) on the stand-in. */
  sealSample(raw?: string): StandInRecord;
  stop(): Promise<void>;
}

/**
 * The auth service on a fresh PostgreSQL database, with a seal stand-in and a capturing SMS provider
 * (`http` format) it talks to. Pass `seal`/`sms`/`databaseUrl` to start a second instance beside a first,
 * and `s3` to keep objects on the real S3 server rather than the local-disk driver.
 */
export async function startAuthHarness(
  options: {
    env?: Record<string, string>;
    databaseUrl?: string;
    /** In-memory PGlite rather than PostgreSQL. */
    pglite?: boolean;
    seal?: SealStandIn;
    sms?: SmsCapture;
    s3?: S3TestServer;
  } = {},
): Promise<AuthHarness> {
  const seal = options.seal ?? (await startSealStandIn({ serviceToken: 'test-service-token' }));
  const sms = options.sms ?? (await startSmsCapture());
  const clock = new TestClock();
  const auth = await startServiceForTest(authService, {
    clock,
    databaseUrl: options.databaseUrl,
    pglite: options.pglite,
    s3: options.s3,
    env: {
      SEAL_URL: seal.url,
      SMS_PROVIDER: 'http',
      SMS_PROVIDER_URL: `${sms.url}/sms`,
      SMS_PROVIDER_USER: 'sms-user',
      SMS_PROVIDER_PASSWORD: 'sms-password',
      SMS_SENDER: 'Sealpost',
      AUTH_SECRET: TEST_AUTH_SECRET,
      ...options.env,
    },
  }).catch(async (error: unknown) => {
    if (!options.seal) await seal.close();
    if (!options.sms) await sms.close();
    throw error;
  });
  return {
    auth,
    seal,
    sms,
    clock,
    reader: (forwardedFor) => new Reader(auth.url, forwardedFor),
    sealSample: (raw = SAMPLE_MESSAGE) => seal.register({ raw, recipients: [ALICE, BOB], subject: 'Contract' }),
    async stop() {
      await auth.stop();
      if (!options.sms) await sms.close();
      if (!options.seal) await seal.close();
    },
  };
}

/** Gets a session and token, asks for an SMS code for ALICE and signs in with it. */
export async function signInAlice(harness: AuthHarness, reader: Reader, messageId: string, rememberMe = false) {
  await reader.get(`/v1/config?messageId=${messageId}`);
  const sent = await reader.request('POST', '/v1/auth/code', {
    body: { messageId, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
  });
  if (sent.status !== 200) throw new Error(`code request failed: ${sent.status} ${JSON.stringify(sent.body)}`);
  const verified = await reader.request('POST', '/v1/auth/verify', {
    body: { code: harness.sms.lastCodeTo(ALICE.mobile), rememberMe },
  });
  if (verified.status !== 200) throw new Error(`verify failed: ${verified.status} ${JSON.stringify(verified.body)}`);
  return verified;
}
