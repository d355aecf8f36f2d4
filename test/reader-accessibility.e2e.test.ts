import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { TEXTS, type Texts } from '../web/reader/texts/index.ts';
import { assertNone, checkScreen, describeViolations, heading, SCREENSHOTS, WIDTHS } from './support/reader-axe.ts';
import { type MailContent, nextCode, requestCode, sealFor, wrongCode } from './support/reader-browser.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * The reader page in its four languages, checked with axe-core (through @axe-core/playwright, all rules
 * but the experimental ones) on every screen — sign-in, code, message with the reply form, reply sent,
 * signed out, a link to no message, a broken seal, and the alerts of a form — in English, German, French
 * and Italian, at 360 and 1280 px: no violations. The languages are switched with the page's own
 * switcher, so that it is checked on every screen too. The plain pages for addresses that are no reader
 * link (English only) are checked as well. Screenshots go to test-output/screenshots
 * (`a11y-<screen>-<lang>-<width>.png`); the README's come from here. The two final states of a message that
 * ended (withdrawn, expired) are checked the same way in reader-end.e2e.test.ts.
 */

const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const CAROL = { email: 'carol@example.com', mobile: '+41791234568' };
const OTHER_SUBJECT = 'Your deposit, sealed';
const SUBJECT = 'Your contract, sealed';
const TAMPERED_SUBJECT = 'Your deed, sealed';
const BODY_LINE = 'Please find the signed contract attached.';
const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** The message of the accessibility checks: with `html`, its HTML with a remote image and an attachment. */
function mail(subject: string, html: boolean): MailContent {
  return {
    subject,
    text: `Hello,\n\n${BODY_LINE}\n\nKind regards,\nDana ${'x'.repeat(400)}`,
    ...(html
      ? {
          html:
            `<p>Hello,</p><p><strong>${BODY_LINE}</strong></p>` +
            '<p><img src="https://images.example.invalid/logo.png" alt="Logo"></p><p>Kind regards,<br>Dana</p>',
          attachments: [{ filename: 'contract.png', content: TINY_PNG, contentType: 'image/png' }],
        }
      : {}),
  };
}

/** The block files of the IPFS Cluster stand-in (blockstore-fs: one `.data` file per block). */
async function blockFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.data'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('the reader page in four languages, accessible (axe-core in Chromium)', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let dataDir: string;
  let link: string;

  const stack = useReaderStack('reader-a11y', {
    DELIVERY_RETRY_BASE: '1s',
    // A wrong code in each of the four languages, and the right one still works.
    CODE_MAX_ATTEMPTS: '10',
  });
  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    ({ sms, sink, sealpost, browser, dataDir } = stack);
    // A second message for the same recipient, so that the message screen lists "your other sealed messages".
    await sealFor(sealpost.ports.smtp, sink, ALICE, mail(OTHER_SUBJECT, false));
    link = await sealFor(sealpost.ports.smtp, sink, ALICE, mail(SUBJECT, true));
  });

  it("speaks ?lang=, else the browser's, else English; switched in place (keyboard too), kept in the URL", async () => {
    for (const [locale, path, expected] of [
      ['fr-FR', '', 'fr'],
      ['fr-FR', '?lang=it', 'it'],
      ['de-CH', '', 'de'],
      ['es-ES', '', 'en'],
      ['es-ES', '?lang=xx', 'en'],
    ] as const) {
      const context = await browser.newContext({ locale, viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      try {
        await page.goto(`${link}${path}`);
        await page.getByRole('heading', { name: TEXTS[expected].signIn.title }).waitFor();
        assert.equal(await page.evaluate(() => document.documentElement.lang), expected, `${locale} ${path}`);
      } finally {
        await context.close();
      }
    }

    const context = await browser.newContext({ locale: 'en-GB', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${link}?lang=it`);
      await page.getByLabel(TEXTS.it.signIn.email).fill(ALICE.email);
      // Keyboard only: Up from Italiano (the last) is Français, at once, with the focus kept on the switcher.
      await page.getByLabel('Lingua').focus();
      await page.keyboard.press('ArrowUp');
      await page.getByRole('heading', { name: TEXTS.fr.signIn.title }).waitFor();
      assert.equal(await page.evaluate(() => document.documentElement.lang), 'fr');
      assert.equal(
        await page.evaluate(() => document.activeElement?.id),
        'language',
        'the focus stays on the switcher',
      );
      assert.equal(await page.getByLabel(TEXTS.fr.signIn.email).inputValue(), ALICE.email, 'what was typed stays');
      assert.equal(new URL(page.url()).searchParams.get('lang'), 'fr');
      assert.equal(await page.title(), `${TEXTS.fr.signIn.title} – Sealpost`);
      await page.reload();
      await page.getByRole('heading', { name: TEXTS.fr.signIn.title }).waitFor();
    } finally {
      await context.close();
    }
  });

  it('no violations on the sign-in and code screens, with and without an alert, every language and width', async () => {
    const found: string[] = [];
    const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(link);
      await checkScreen(page, 'sign-in', found, (page, t) => heading(t.signIn.title)(page));
      await checkScreen(
        page,
        'sign-in-error',
        found,
        (page, t) => heading(t.signIn.title)(page),
        async (page, t) => {
          await page.getByLabel(t.signIn.email).fill('not an address');
          await page.getByRole('button', { name: t.signIn.send }).click();
          await page.getByRole('alert').filter({ hasText: t.errors.invalid_email }).waitFor();
        },
      );
      // The README's sign-in: English, on a phone.
      await page.goto(link);
      await page.setViewportSize({ width: 360, height: 780 });
      await page.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
      await page.screenshot({ path: join(SCREENSHOTS, 'readme-sign-in-360.png') });
      await page.setViewportSize({ width: 1280, height: 900 });

      const before = sms.messages.length;
      await requestCode(page, link, ALICE);
      const code = await nextCode(sms, ALICE.mobile, before);
      await checkScreen(page, 'code', found, (page, t) => heading(t.code.title)(page));
      await checkScreen(
        page,
        'code-wrong',
        found,
        (page, t) => heading(t.code.title)(page),
        async (page, t) => {
          await page.getByLabel(t.code.label, { exact: true }).fill(wrongCode(code));
          await page.getByRole('button', { name: t.code.submit, exact: true }).click();
          await page.getByRole('alert').filter({ hasText: t.errors.incorrect_code }).waitFor();
        },
      );
    } finally {
      await context.close();
    }
    assertNone(found);
  });

  it('no violations on the message with the reply form, reply sent, signed out, every language and width', async () => {
    const found: string[] = [];
    const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const before = sms.messages.length;
      await requestCode(page, link, ALICE);
      await page.getByLabel('Code', { exact: true }).fill(await nextCode(sms, ALICE.mobile, before));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
      await page.getByLabel('Your reply').fill('Thank you, signed copy attached.');
      await page
        .locator('input[type=file]')
        .setInputFiles({ name: 'signed.png', mimeType: 'image/png', buffer: TINY_PNG });
      await page.getByRole('button', { name: 'Remove signed.png' }).waitFor();

      const messageReady = async (page: Page, t: Texts) => {
        await page.getByRole('heading', { name: t.reply.title, exact: true }).waitFor();
        await page.frameLocator('iframe.body-frame').getByText(BODY_LINE).waitFor();
        await page.getByRole('button', { name: t.reply.remove('signed.png') }).waitFor();
        // The download link is named by what it shows, with the word for "download" first.
        await page.getByRole('link', { name: new RegExp(`^${t.message.download} contract\\.png \\d+`) }).waitFor();
      };
      await checkScreen(page, 'message', found, async (page, t) => {
        await messageReady(page, t);
        await page.getByRole('link', { name: new RegExp(OTHER_SUBJECT) }).waitFor();
      });
      // The mobile change, opened, with its first form (it stays open across a language switch).
      await checkScreen(page, 'message-mobile', found, messageReady, async (page, t) => {
        const open = await page.locator('details.mobile').evaluate((details) => details.hasAttribute('open'));
        if (!open) await page.getByText(t.mobile.title).click();
        await page.getByLabel(t.mobile.newNumber).waitFor();
      });
      // What was typed went with the draft through every language.
      assert.equal(await page.getByLabel('Your reply').inputValue(), 'Thank you, signed copy attached.');
      await page.getByText('Your unsent draft was restored.').waitFor();
      await page.screenshot({ path: join(SCREENSHOTS, 'readme-message-1280.png'), fullPage: true });

      await page.getByRole('button', { name: 'Send reply' }).click();
      await page.getByRole('heading', { name: 'Your reply was sent' }).waitFor();
      await checkScreen(page, 'sent', found, (page, t) => heading(t.sent.title)(page));

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      await checkScreen(page, 'signed-out', found, (page, t) => heading(t.signedOut.title)(page));
    } finally {
      await context.close();
    }
    assertNone(found);
  });

  it('no violations on the error screens (no such message, broken seal), in every language and width', async () => {
    const found: string[] = [];
    const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(new URL('/m/no-such-message', link).href);
      await checkScreen(page, 'not-found', found, async (page, t) => {
        await heading(t.fatal.title)(page);
        await page.getByRole('alert').filter({ hasText: t.errors.not_found }).waitFor();
      });

      // A flipped byte in the stored block of a message sealed for this: its content no longer matches.
      const blocks = join(dataDir, 'ipfs-cluster', 'blocks');
      const known = new Set(await blockFiles(blocks));
      const tamperedLink = await sealFor(sealpost.ports.smtp, sink, CAROL, mail(TAMPERED_SUBJECT, false));
      const added = (await blockFiles(blocks)).filter((file) => !known.has(file));
      const sizes = await Promise.all(added.map(async (file) => ({ file, size: (await stat(file)).size })));
      const target = sizes.sort((a, b) => b.size - a.size)[0]!.file;
      const block = await readFile(target);
      block.writeUInt8(block.readUInt8(Math.floor(block.length / 2)) ^ 0x01, Math.floor(block.length / 2));
      await writeFile(target, block);

      const before = sms.messages.length;
      await requestCode(page, tamperedLink, CAROL);
      await page.getByLabel('Code', { exact: true }).fill(await nextCode(sms, CAROL.mobile, before));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'The seal is broken' }).waitFor();
      await checkScreen(page, 'seal-broken', found, (page, t) => heading(t.brokenSeal.title)(page));

      // The plain pages for addresses that are no reader link (English only, no script, no switcher).
      for (const [path, name] of [
        ['/', 'no-link'],
        [`/m/${'a'.repeat(600)}`, 'link-too-long'],
      ] as const) {
        await page.goto(new URL(path, link).href);
        for (const width of WIDTHS) {
          await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
          const results = await new AxeBuilder({ page }).analyze();
          found.push(...describeViolations(`${name}, en, ${width} px`, results.violations));
        }
      }
    } finally {
      await context.close();
    }
    assertNone(found);
  });
});
