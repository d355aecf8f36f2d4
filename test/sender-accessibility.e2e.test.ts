import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SENDER_TEXTS, type SenderTexts } from '../web/reader/sender/texts/index.ts';
import { assertNone, checkScreen, SCREENSHOTS } from './support/reader-axe.ts';
import { CHROMIUM, CHROMIUM_ARGS } from './support/reader-stack.ts';
import { startSenderFake, type SenderFake } from './support/sender-fake.ts';

/**
 * The sender's page (/sent) in its four languages, checked with axe-core on every screen — sign-in with its
 * alert, the code with the tries left, the list, a message with a withdrawal's confirmation open and a refused
 * end date, signed out — at 360 and 1280 px: no violations. Against the stand-in of the sender API
 * (test/support/sender-fake.ts). Screenshots: test-output/screenshots/a11y-sender-<screen>-<lang>-<width>.png.
 */

const DANA = 'dana@sender.example';
const DAY = 86_400_000;

describe("the sender's page in four languages, accessible (axe-core in Chromium)", () => {
  let fake: SenderFake;
  let browser: Browser;
  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    fake = await startSenderFake({ maxAttempts: 10, maxExpiryMs: 30 * DAY });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    for (let i = 0; i < 21; i++) {
      const sealedAt = new Date(Date.now() - (i + 1) * DAY).toISOString();
      const id = fake.seal({
        sender: DANA,
        subject: i === 0 ? 'Your contract, sealed' : `Invoice ${i}`,
        sealedAt,
        expiresAt: new Date(Date.now() + 10 * DAY).toISOString(),
        recipients: ['alice@example.com', 'carol.with.a.rather.long.address@example.com'],
      });
      fake.event(id, { at: sealedAt, event: 'notified', recipient: 'alice@example.com' });
      fake.event(id, { at: sealedAt, event: 'opened', recipient: 'alice@example.com' });
    }
  });
  after(async () => {
    await browser?.close();
    await fake?.close();
  });

  const screen = (name: string) => (page: Page) => page.locator(`main[data-screen="${name}"]`).waitFor();
  const check = (
    page: Page,
    name: string,
    found: string[],
    ready: (page: Page, t: SenderTexts) => Promise<unknown>,
    prepare?: (page: Page, t: SenderTexts) => Promise<unknown>,
  ) => checkScreen(page, `sender-${name}`, found, ready, prepare, SENDER_TEXTS);

  it('has no violations on any screen, in any language, at 360 and 1280 px', async () => {
    const context = await browser.newContext({ locale: 'en-US', timezoneId: 'Europe/Zurich' });
    const page = await context.newPage();
    const found: string[] = [];
    try {
      await page.goto(`${fake.url}/sent`);
      await check(page, 'sign-in', found, async (page, t) => {
        await screen('sender-sign-in')(page);
        await page.getByRole('heading', { name: t.signIn.title }).waitFor();
      });
      await check(page, 'sign-in-alert', found, screen('sender-sign-in'), async (page, t) => {
        await page.getByLabel(t.signIn.email).fill('not an address');
        await page.getByRole('button', { name: t.signIn.send }).click();
        await page.getByRole('alert').getByText(t.errors.invalid_email).waitFor();
      });

      await page.getByLabel('Your email address').fill(DANA);
      await page.getByRole('button', { name: 'Send me a code' }).click();
      await check(
        page,
        'code',
        found,
        async (page, t) => page.getByRole('heading', { name: t.code.title }).waitFor(),
        async (page, t) => {
          await page
            .getByLabel(t.code.label, { exact: true })
            .fill('000000' === fake.codes.get(DANA) ? '111111' : '000000');
          await page.getByRole('button', { name: t.code.submit }).click();
          await page.locator('[role="alert"]:not([hidden])').waitFor();
        },
      );
      await page.getByLabel('Code', { exact: true }).fill(fake.codes.get(DANA)!);
      await page.getByRole('button', { name: 'Sign in' }).click();

      await check(page, 'list', found, async (page, t) => {
        await screen('sender-list')(page);
        await page.getByRole('button', { name: t.list.older }).waitFor();
      });

      await page.getByRole('button', { name: /Your contract, sealed/ }).click();
      await check(
        page,
        'message',
        found,
        async (page, t) => {
          await screen('sender-message')(page);
          await page.getByRole('heading', { name: t.detail.recipients }).waitFor();
        },
        async (page, t) => {
          await page.getByRole('button', { name: t.withdraw.one('alice@example.com'), exact: true }).click();
          await page.getByRole('button', { name: t.withdraw.confirmOneButton('alice@example.com') }).click();
          await page.getByRole('alert').getByText(t.withdraw.needReason).waitFor();
          const late = new Date(Date.now() + 60 * DAY);
          const local = new Intl.DateTimeFormat('sv-SE', {
            timeZone: 'Europe/Zurich',
            dateStyle: 'short',
            timeStyle: 'short',
          }).format(late);
          await page.getByLabel(t.endDate.label).fill(local.replace(' ', 'T'));
          await page.getByRole('button', { name: t.endDate.save }).click();
          await page.locator('.end-date-form [role="alert"]:not([hidden])').waitFor();
        },
      );

      await page.getByRole('button', { name: 'Sign out' }).click();
      await check(page, 'signed-out', found, async (page, t) =>
        page.getByRole('heading', { name: t.signedOut.title }).waitFor(),
      );
      assertNone(found);
      assert.ok(fake.calls.some((c) => c.path === '/logout'));
    } finally {
      await context.close();
    }
  });
});
