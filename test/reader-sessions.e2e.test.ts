import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { enterCode, nextCode, requestCode, sealFor } from './support/reader-browser.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * One sign-in opens all of a recipient's sealed messages, in Chromium against `sealpost start all`: three
 * messages sealed for the same address and number open one after the other (and again) after one SMS code;
 * the message page lists the others; "keep me signed in" holds across a browser restart, for every message.
 */

const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const SUBJECTS = ['Your lease, sealed', 'Your deposit, sealed', 'Your keys, sealed'];
const NEW_MOBILE = '+41797654321';

describe('one sign-in opens every sealed message of the recipient (Chromium)', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  const links: string[] = [];

  const stack = useReaderStack('reader-sessions');
  before(async () => {
    ({ sms, sink, sealpost, browser } = stack);
    for (const subject of SUBJECTS)
      links.push(await sealFor(sealpost.ports.smtp, sink, ALICE, { subject, text: `About: ${subject}.` }));
  });

  const opened = (page: Page, subject: string) =>
    page.getByRole('heading', { level: 1, name: subject }).waitFor({ timeout: 15_000 });

  it('signs in once, opens A, B, C, A with no other code, lists the others, keeps them over a restart', async () => {
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
    assert.deepEqual(
      (await others.allTextContents()).map((text) => SUBJECTS.find((subject) => text.includes(subject))),
      [SUBJECTS[2], SUBJECTS[1]],
    );
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
    const restarted = await browser.newContext({
      viewport: { width: 360, height: 780 },
      storageState: { cookies: kept, origins: [] },
    });
    const again = await restarted.newPage();
    for (const index of [1, 0]) {
      await again.goto(links[index]!);
      await opened(again, SUBJECTS[index]!);
    }
    assert.equal(sms.messages.length, codesAfterSignIn, 'no code after the restart either');
    await restarted.close();
  });

  it('changes the mobile with codes to the old then the new number, and tells the old number and address', async () => {
    const link = await sealFor(sealpost.ports.smtp, sink, ALICE, {
      subject: 'Your contract, sealed',
      text: 'Please sign.',
    });
    const context = await browser.newContext({ viewport: { width: 360, height: 780 } });
    const page = await context.newPage();
    try {
      const before = sms.messages.length;
      await requestCode(page, link, ALICE);
      await enterCode(page, await nextCode(sms, ALICE.mobile, before));
      await opened(page, 'Your contract, sealed');

      await page.getByText('Change your mobile number').click();
      await page.getByLabel('New mobile number').fill(ALICE.mobile);
      await page.getByRole('button', { name: 'Send a code to my current number' }).click();
      await page.getByRole('alert').filter({ hasText: 'This is already your mobile number.' }).waitFor();

      const sentBefore = sms.messages.length;
      await page.getByLabel('New mobile number').fill(NEW_MOBILE);
      await page.getByRole('button', { name: 'Send a code to my current number' }).click();
      await page.getByText('Enter the code we sent to +41*******67.').waitFor();
      assert.deepEqual(
        sms.messages.slice(sentBefore).map((m) => m.to),
        [ALICE.mobile],
        'the first code goes to the current number',
      );
      await page.getByLabel('Code', { exact: true }).fill(sms.lastCodeTo(ALICE.mobile));
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.getByText('Enter the code we sent to +41*******21.').waitFor();
      await page.getByLabel('Code', { exact: true }).fill(await nextCode(sms, NEW_MOBILE, sentBefore));
      const mailsBefore = sink.messages.length;
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Your mobile number is now ${NEW_MOBILE}.` })
        .waitFor();

      const notice = sms.messages.filter((m) => m.to === ALICE.mobile).at(-1)!;
      assert.match(notice.text, /was changed on .+ UTC\. If this was not you, contact the sender\./);
      await sink.waitUntil(
        () => sink.messages.slice(mailsBefore).some((m) => m.to.includes(ALICE.email)),
        15_000,
        'the notice to the address',
      );
      const mail = sink.messages.slice(mailsBefore).find((m) => m.to.includes(ALICE.email))!;
      assert.match(mail.raw.toString(), /^Subject: Your mobile number for a sealed message was changed\r?$/m);
    } finally {
      await context.close();
    }
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
