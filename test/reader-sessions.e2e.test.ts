import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildReader } from '../src/auth/reader-assets.ts';
import { enterCode, nextCode, requestCode, sealFor } from './support/reader-browser.ts';
import { startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmsCapture, type SmsCapture } from './support/sms-capture.ts';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.ts';

/**
 * One sign-in opens all of a recipient's sealed messages, in Chromium against `sealpost start all`: three
 * messages sealed for the same address and number open one after the other (and again) after one SMS code;
 * the message page lists the others; "keep me signed in" holds across a browser restart, for every message.
 */

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking'];
const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const SUBJECTS = ['Your lease, sealed', 'Your deposit, sealed', 'Your keys, sealed'];

describe('one sign-in opens every sealed message of the recipient (Chromium)', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let dataDir: string;
  const links: string[] = [];

  before(async () => {
    await buildReader();
    sms = await startSmsCapture();
    sink = await startSmtpSink();
    dataDir = await mkdtemp(join(tmpdir(), 'sealpost-reader-sessions-'));
    sealpost = await startSealpostProcess(
      { SEALPOST_DATA_DIR: dataDir, SMS_PROVIDER: 'http', SMS_PROVIDER_URL: `${sms.url}/sms`, OUTBOUND_SMTP_URL: sink.url, DELIVERY_POLL_INTERVAL: '100ms', SMS_LIMIT_NUMBER_INTERVAL: '0s' },
      { timeoutMs: 120_000 },
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    for (const subject of SUBJECTS) links.push(await sealFor(sealpost.ports.smtp, sink, ALICE, subject, `About: ${subject}.`));
  });

  after(async () => {
    await browser?.close();
    await sealpost?.stop();
    await sink?.close();
    await sms?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const opened = (page: Page, subject: string) => page.getByRole('heading', { level: 1, name: subject }).waitFor({ timeout: 15_000 });

  it('signs in once, opens three messages (A, B, C, A) without another code, lists the others, and keeps them after a browser restart', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const before = sms.messages.length;
    await requestCode(page, links[0]!, ALICE);
    await page.getByLabel('Keep me signed in on this device').check();
    await enterCode(page, await nextCode(sms, ALICE.mobile, before));
    await opened(page, SUBJECTS[0]!);
    const codesAfterSignIn = sms.messages.length;

    // The page lists the other two, newest first, and a click opens one without a code.
    const others = page.getByRole('region', { name: 'Your other sealed messages' }).getByRole('link');
    await others.first().waitFor();
    assert.deepEqual((await others.allTextContents()).map((text) => SUBJECTS.find((subject) => text.includes(subject))), [SUBJECTS[2], SUBJECTS[1]]);
    await others.filter({ hasText: SUBJECTS[2]! }).click();
    await opened(page, SUBJECTS[2]!);

    for (const index of [1, 2, 0]) {
      await page.goto(links[index]!);
      await opened(page, SUBJECTS[index]!);
    }
    assert.equal(sms.messages.length, codesAfterSignIn, 'no code was sent after the sign-in');

    // A browser restart keeps the cookies that have an end (Max-Age), nothing else.
    const kept = (await context.storageState()).cookies.filter((cookie) => cookie.expires > 0);
    assert.ok(kept.length > 0, 'keep me signed in set a persistent cookie');
    await context.close();
    const restarted = await browser.newContext({ viewport: { width: 360, height: 780 }, storageState: { cookies: kept, origins: [] } });
    const again = await restarted.newPage();
    for (const index of [1, 0]) {
      await again.goto(links[index]!);
      await opened(again, SUBJECTS[index]!);
    }
    assert.equal(sms.messages.length, codesAfterSignIn, 'no code after the restart either');
    await restarted.close();
  });

  it('without keep-me-signed-in, a browser restart asks for a code again', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const before = sms.messages.length;
    await requestCode(page, links[1]!, ALICE);
    await enterCode(page, await nextCode(sms, ALICE.mobile, before));
    await opened(page, SUBJECTS[1]!);
    const kept = (await context.storageState()).cookies.filter((cookie) => cookie.expires > 0);
    await context.close();
    const restarted = await browser.newContext({ storageState: { cookies: kept, origins: [] } });
    const again = await restarted.newPage();
    await again.goto(links[0]!);
    await again.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
    await restarted.close();
  });
});
