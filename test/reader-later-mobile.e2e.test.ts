import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import type { Texts } from '../web/reader/texts/index.ts';
import { assertNone, checkScreen, SCREENSHOTS } from './support/reader-axe.ts';
import { nextCode, sealFor } from './support/reader-browser.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * The reader page's "Protect your later messages by SMS" (docs/design.md#contacts), in Chromium on the real stack:
 * Frank, given no number, signs in with an email code, opens the section by keyboard, adds his number with the
 * code the SMS brings, and his next message asks for an SMS code; the section passes axe in four languages.
 */

const FRANK = { email: 'frank@example.com' };
const MOBILE = '+41791116666';

async function emailCode(sink: SmtpSink, to: string, before: number): Promise<string> {
  const isCodeMail = (m: SmtpSink['messages'][number]) =>
    m.to.includes(to) && m.raw.toString().includes('Your Sealpost code is');
  await sink.waitUntil(() => sink.messages.slice(before).some(isCodeMail), 10_000, `the code email to ${to}`);
  return /Your Sealpost code is (\d{6})/.exec(
    sink.messages.slice(before).filter(isCodeMail).at(-1)!.raw.toString(),
  )![1]!;
}

describe('a recipient protects their later messages from the reader page (Chromium)', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  const stack = useReaderStack('reader-later-mobile', { DELIVERY_RETRY_BASE: '1s' });
  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    ({ sms, sink, sealpost, browser } = stack);
  });

  it('adds a number by keyboard after an email sign-in; the next message asks for SMS; axe finds nothing', async () => {
    const link = await sealFor(sealpost.ports.smtp, sink, FRANK, { subject: 'Your policy', text: 'Read me.' });
    const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const found: string[] = [];
    try {
      await page.goto(link);
      const mails = sink.messages.length;
      await page.getByLabel('Email address').fill(FRANK.email);
      await page.getByRole('button', { name: 'Send me a code' }).click();
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      await page.getByLabel('Code', { exact: true }).fill(await emailCode(sink, FRANK.email, mails));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Your policy' }).waitFor();
      // A recipient who signs in by email is offered the later number, not the mobile change.
      assert.equal(await page.getByText('Change your mobile number').count(), 0);

      // The language switch renders the screen again (the section folded): wait until it has.
      const ready = async (page: Page, t: Texts) => {
        await page.getByRole('heading', { name: t.reply.title, exact: true }).waitFor();
        await page.getByText(t.laterMobile.title).waitFor();
      };
      await checkScreen(page, 'message-later-mobile', found, ready, async (page, t) => {
        // Opened once the screen has settled (its parts load after it is first drawn, drawing it again).
        const number = page.getByLabel(t.laterMobile.number);
        for (let tries = 0; tries < 40 && !(await number.isVisible()); tries++) {
          if ((await page.locator('details.mobile').getAttribute('open')) === null)
            await page.getByText(t.laterMobile.title).click();
          await page.waitForTimeout(250);
        }
        await number.waitFor();
      });
      assertNone(found);

      // By keyboard: the section opened with Enter on its heading, Tab to the number, Enter; the code, Enter.
      const number = page.getByLabel('Mobile number', { exact: true });
      for (let tries = 0; tries < 40 && !(await number.isVisible()); tries++) {
        if ((await page.locator('details.mobile').getAttribute('open')) === null) {
          await page.locator('details.mobile summary').focus();
          await page.keyboard.press('Enter');
        }
        await page.waitForTimeout(250);
      }
      // Open already when it was left open before a language switch: from its heading, Tab reaches the number.
      await page.locator('details.mobile summary').focus();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('type')), 'tel');
      await page.keyboard.type('+41 79 111 66 66');
      const before = sms.messages.length;
      await page.keyboard.press('Enter');
      const code = await nextCode(sms, MOBILE, before);
      await page.getByText('Enter the code we sent to').waitFor();
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('autocomplete')), 'one-time-code');
      await page.keyboard.type(code);
      await page.keyboard.press('Enter');
      await page
        .getByRole('status')
        .getByText(/codes for your later messages will go to/)
        .waitFor();
    } finally {
      await context.close();
    }

    // The next message asks for the mobile number: its code goes by SMS.
    const next = await sealFor(sealpost.ports.smtp, sink, FRANK, { subject: 'Your renewal', text: 'Read me too.' });
    const second = await browser.newContext({ locale: 'en-US' });
    try {
      const page = await second.newPage();
      await page.goto(next);
      await page.getByLabel('Email address').fill(FRANK.email);
      await page.getByLabel(/Mobile number/).fill(MOBILE);
      const before = sms.messages.length;
      await page.getByRole('button', { name: 'Send me a code' }).click();
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      await page.getByLabel('Code', { exact: true }).fill(await nextCode(sms, MOBILE, before));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Your renewal' }).waitFor();
    } finally {
      await second.close();
    }
  });
});
