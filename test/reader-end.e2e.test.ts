import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { TEXTS } from '../web/reader/texts/index.ts';
import { ALICE, BOB, SAMPLE_MESSAGE, startAuthHarness, type AuthHarness } from './support/auth-harness.ts';
import { assertNone, checkScreen, heading, SCREENSHOTS } from './support/reader-axe.ts';
import { enterCode, nextCode, requestCode, watchRequests } from './support/reader-browser.ts';
import { CHROMIUM, CHROMIUM_ARGS } from './support/reader-stack.ts';

/**
 * The reader page's two final states of a message that ended (docs/specification.md#end-dates), in Chromium
 * against the auth service and the seal stand-in of the auth tests, which ends messages as the seal service does
 * (410 message_withdrawn / message_expired with endedAt and contact): "withdrawn on …" to a reader whose session
 * is open, the moment their next request meets the withdrawal; "expired on …" before sign-in, with no code asked
 * for. Each says whom to ask, in the reader's language, and offers no retry, no reply form and no sign-in form.
 * axe-core finds no violations on either, in four languages at 360 and 1280 px. Screenshots go to
 * test-output/screenshots.
 */

const SENDER = 'sender@example.org';

describe('the reader page after a message ended (Chromium)', () => {
  let harness: AuthHarness;
  let browser: Browser;

  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    harness = await startAuthHarness({ env: { SMS_LIMIT_NUMBER_INTERVAL: '0s' } });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  after(async () => {
    await browser?.close();
    await harness?.stop();
  });

  const newPage = async (): Promise<{ context: BrowserContext; page: Page }> => {
    // UTC, so that the dates shown are the ones written here.
    const context = await browser.newContext({
      locale: 'en-US',
      timezoneId: 'UTC',
      viewport: { width: 1280, height: 900 },
    });
    return { context, page: await context.newPage() };
  };

  /** Signs ALICE in on the page and waits for the message. */
  async function signInAlice(page: Page, link: string): Promise<void> {
    const sent = harness.sms.messages.length;
    await requestCode(page, link, ALICE);
    await enterCode(page, await nextCode(harness.sms, ALICE.mobile, sent));
    await page.getByRole('heading', { name: 'Contract' }).waitFor();
  }

  /** Nothing on the page but the final state: no form to sign in or reply, no way to try again. */
  async function assertFinal(page: Page): Promise<void> {
    for (const label of ['Email address', 'Code', 'Your reply'])
      assert.equal(await page.getByLabel(label, { exact: true }).count(), 0, `no field "${label}"`);
    for (const name of ['Try again', 'Send reply', 'Send me a code'])
      assert.equal(await page.getByRole('button', { name }).count(), 0, `no button "${name}"`);
    // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
    assert.doesNotMatch(await page.locator('main').innerText(), /Please sign the contract/, 'nothing of the content');
  }

  it('tells a signed-in reader at once that it was withdrawn for them, when, and whom to ask', async () => {
    const record = harness.seal.register({ raw: SAMPLE_MESSAGE, recipients: [ALICE, BOB], subject: 'Contract' });
    const link = `${harness.auth.url}/m/${record.id}`;
    const { context, page } = await newPage();
    try {
      await signInAlice(page, link);
      const requests = watchRequests(page);
      await page.getByLabel('Your reply').fill('Thank you.');
      await page.getByLabel('Your reply').blur();
      await page.getByText('Draft saved.', { exact: false }).waitFor();
      await requests.settled();

      harness.seal.withdrawFor(record.id, ALICE.email, new Date('2026-12-07T10:30:00Z'));
      // The open page's next request (a draft save) meets the withdrawal: the final state, at once.
      await page.getByLabel('Your reply').fill('Thank you, signed.');
      await page.getByLabel('Your reply').blur();
      await page.getByRole('heading', { name: 'This message was withdrawn' }).waitFor();
      assert.equal(await page.locator('main').getAttribute('data-screen'), 'message-withdrawn');
      assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1', 'the focus is on the heading');
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
      const text = await page.locator('main').innerText();
      assert.match(text, /This message was withdrawn on December 7, 2026 at 10:30\sAM\./);
      assert.match(text, /Ask sender@example\.org if you need it\./);
      assert.equal(await page.getByRole('link', { name: SENDER }).getAttribute('href'), `mailto:${SENDER}`);
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      await assertFinal(page);
      assert.equal(await page.title(), 'This message was withdrawn – Sealpost');

      // A reload, and another language: the same state, the date in German.
      await page.reload();
      await page.getByRole('heading', { name: 'This message was withdrawn' }).waitFor();
      await assertFinal(page);
      await page.locator('#language').selectOption('de');
      await page.getByRole('heading', { name: TEXTS.de.ended.withdrawnTitle }).waitFor();
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
      const german = await page.locator('main').innerText();
      assert.match(german, /Diese Nachricht wurde am 7\. Dezember 2026 um 10:30 zurückgezogen\./);
      assert.match(german, /Wenden Sie sich an sender@example\.org, wenn Sie sie benötigen\./);
      await page.locator('#language').selectOption('en');
      for (const width of [1280, 360]) {
        await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
        await page.screenshot({ path: join(SCREENSHOTS, `message-withdrawn-${width}.png`), fullPage: true });
      }
    } finally {
      await context.close();
    }
  });

  it('tells before sign-in that it expired, when, and whom to ask, and asks for no code', async () => {
    const expiresAt = new Date(Date.now() - 60_000);
    const record = harness.seal.register({
      raw: SAMPLE_MESSAGE,
      recipients: [ALICE, BOB],
      subject: 'Contract',
      expiresAt,
    });
    const { context, page } = await newPage();
    try {
      const sms = harness.sms.messages.length;
      await page.goto(`${harness.auth.url}/m/${record.id}`);
      await page.getByRole('heading', { name: 'This message has expired' }).waitFor();
      assert.equal(await page.locator('main').getAttribute('data-screen'), 'message-expired');
      const date = new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' }).format(expiresAt);
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
      const text = await page.locator('main').innerText();
      assert.ok(text.includes(`This message expired on ${date} at `), text);
      assert.match(text, /Ask sender@example\.org if you need it\./);
      assert.doesNotMatch(text, /Contract/, 'not even the subject');
      assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 0, 'nobody is signed in');
      await assertFinal(page);
      assert.equal(harness.sms.messages.length, sms, 'no code sent');
      for (const width of [1280, 360]) {
        await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
        await page.screenshot({ path: join(SCREENSHOTS, `message-expired-${width}.png`), fullPage: true });
      }
    } finally {
      await context.close();
    }
  });

  it('no axe violations on both final states, in every language and at every width', async () => {
    const found: string[] = [];
    const withdrawn = harness.seal.register({ raw: SAMPLE_MESSAGE, recipients: [ALICE, BOB], subject: 'Contract' });
    const expired = harness.seal.register({
      raw: SAMPLE_MESSAGE,
      recipients: [ALICE, BOB],
      subject: 'Contract',
      expiresAt: new Date(Date.now() - 60_000),
    });
    const { context, page } = await newPage();
    try {
      // Withdrawn for the signed-in reader: with the sign-out.
      await signInAlice(page, `${harness.auth.url}/m/${withdrawn.id}`);
      harness.seal.withdrawFor(withdrawn.id, ALICE.email);
      await page.reload();
      await checkScreen(page, 'message-withdrawn', found, async (page, t) => {
        await heading(t.ended.withdrawnTitle)(page);
        await page.getByRole('link', { name: SENDER }).waitFor();
      });
      // Expired, before sign-in.
      await page.goto(`${harness.auth.url}/m/${expired.id}`);
      await checkScreen(page, 'message-expired', found, async (page, t) => {
        await heading(t.ended.expiredTitle)(page);
        await page.getByRole('link', { name: SENDER }).waitFor();
      });
    } finally {
      await context.close();
    }
    assertNone(found);
  });
});
