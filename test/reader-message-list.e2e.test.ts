import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { TEXTS } from '../web/reader/texts/index.ts';
import { assertNone, checkScreen } from './support/reader-axe.ts';
import { enterCode, nextCode, readerLink, requestCode, sendSealedMail } from './support/reader-browser.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * The list of the reader's other messages under the message, in Chromium against `sealpost start all`: 62
 * messages for one recipient made a 5,606 px page; now 20 a page, every other one reachable with "Next", and
 * the buttons where they were from one page to the next.
 */

const EVE = { email: 'eve@example.com', mobile: '+41791234570' };
const COUNT = 62;
const t = TEXTS.en;

describe('the paged list of the other messages in Chromium', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let link: string;

  const stack = useReaderStack('message-list');
  before(async () => {
    ({ sms, sink, sealpost, browser } = stack);
    for (let i = 1; i < COUNT; i++)
      await sendSealedMail(sealpost.ports.smtp, [EVE], { subject: `Letter ${i}`, text: `Letter number ${i}.` });
    // Every notification so far in, so that the next one to Eve is the last letter's.
    const toEve = () => sink.messages.filter((m) => m.to.includes(EVE.email)).length;
    await sink.waitUntil(() => toEve() >= COUNT - 1, 120_000, 'the notifications of the first letters');
    const before = sink.messages.length;
    await sendSealedMail(sealpost.ports.smtp, [EVE], { subject: 'The letter opened', text: 'The one opened.' });
    link = await readerLink(sink, EVE.email, before);
  });

  async function signedIn(width: number): Promise<{ page: Page; close(): Promise<void> }> {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    const codesBefore = sms.messages.length;
    await requestCode(page, link, EVE);
    await enterCode(page, await nextCode(sms, EVE.mobile, codesBefore));
    await page.getByRole('heading', { name: 'The letter opened' }).waitFor();
    return { page, close: () => context.close() };
  }

  const list = (page: Page) => page.locator('section.others');
  const shown = (page: Page) =>
    list(page)
      .locator('li a')
      .evaluateAll((links) => links.map((a) => a.getAttribute('href') ?? ''));
  const range = (page: Page, from: number, to: number) =>
    list(page)
      .getByRole('status')
      .filter({ hasText: t.list.range(from, to) })
      .waitFor();

  it('shows 20 of 62, then page by page all 61 others once, height bounded, the page kept on reload', async () => {
    const { page, close } = await signedIn(1280);
    try {
      await range(page, 1, 20);
      const previous = page.getByRole('button', { name: t.list.previous });
      const next = page.getByRole('button', { name: t.list.next });
      assert.equal(await previous.isDisabled(), true, 'no page before the first');
      const seen = await shown(page);
      assert.equal(seen.length, 20);
      assert.ok(!seen.includes(new URL(link).pathname), 'the message shown is not in its own list');
      const height = await page.evaluate<number>('document.documentElement.scrollHeight');
      assert.ok(height < 4000, `the page is ${height} px high with 20 in the list`);
      // Where "Next" is on the page (not in the window, which scrolls to it for a click).
      const nextAt = () =>
        page.evaluate<number[]>(
          "(() => { const b = document.querySelectorAll('.pager button')[1].getBoundingClientRect();" +
            ' return [b.left + window.scrollX, b.top + window.scrollY]; })()',
        );
      const where = await nextAt();

      for (const [from, to] of [
        [21, 40],
        [41, 60],
        [61, 61],
      ] as const) {
        await next.click();
        await range(page, from, to);
        seen.push(...(await shown(page)));
        assert.deepEqual(await nextAt(), where, `Next stayed where it was (page ${from} to ${to})`);
        assert.ok((await page.evaluate<number>('document.documentElement.scrollHeight')) <= height + 1, 'bounded');
      }
      assert.equal(await next.isDisabled(), true, 'no page after the last');
      assert.equal(
        await page.evaluate<string>('document.activeElement.textContent'),
        t.list.previous,
        'focus went to Previous',
      );
      assert.equal(new Set(seen).size, COUNT - 1, 'every other message once');
      assert.equal(seen.length, COUNT - 1);

      // And back: the page before is the same 20.
      await previous.click();
      await range(page, 41, 60);
      assert.deepEqual(await shown(page), seen.slice(40, 60));
      // A reload comes back to that page, both ways on from it still open.
      await page.reload();
      await range(page, 41, 60);
      assert.deepEqual(await shown(page), seen.slice(40, 60));
      assert.equal(await next.isDisabled(), false, 'the page after it is still reached');
      await previous.click();
      await range(page, 21, 40);
      assert.deepEqual(await shown(page), seen.slice(20, 40));
      // A link opens its message without another code.
      await list(page).locator('li a').first().click();
      await page.getByRole('heading', { name: /^Letter \d+$/ }).waitFor();
    } finally {
      await close();
    }
  });

  it('keeps the page through a language switch; no axe violations on it, in every language and width', async () => {
    const found: string[] = [];
    const { page, close } = await signedIn(1280);
    try {
      await page.getByRole('button', { name: t.list.next }).click();
      await range(page, 21, 40);
      const second = await shown(page);
      // Each language draws the screen again: the list comes back to the page it was on.
      await checkScreen(
        page,
        'message-list',
        found,
        async (page, t) => {
          await list(page)
            .getByRole('status')
            .filter({ hasText: t.list.range(21, 40) })
            .waitFor();
          await page.getByRole('button', { name: t.list.next }).waitFor();
          assert.deepEqual(await shown(page), second);
        },
        (page) => list(page).scrollIntoViewIfNeeded(),
      );
    } finally {
      await close();
    }
    assertNone(found);
  });
});
