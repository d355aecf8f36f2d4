import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { TEXTS } from '../web/reader/texts/index.ts';
import { assertNone, checkScreen, heading } from './support/reader-axe.ts';
import { enterCode, nextCode, readerLink, requestCode, sendSealedMail } from './support/reader-browser.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * One draft, two windows of one signed-in reader, in Chromium against `sealpost start all`: what each typed is
 * kept and shown for the reader to choose, files attached in either stay listed, and a window whose draft the
 * other sent says so, with the time it went. Replies are counted at the SMTP sink.
 */

const SENDER_ADDRESS = 'dana@sender.example';
const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const CAROL = { email: 'carol@example.com', mobile: '+41791234568' };
const DAVE = { email: 'dave@example.com', mobile: '+41791234569' };
const SUBJECT = 'Two windows, one reply';
const t = TEXTS.en;
/** A PNG signature and then bytes: passes the magic-byte check. */
const png = (name: string) => ({
  name,
  mimeType: 'image/png',
  buffer: Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(2000, 7)]),
});

describe('two windows of one draft in Chromium: no typed word lost, a reply sent elsewhere said as sent', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let link: string;
  const replies = () => sink.messages.filter((m) => m.to.includes(SENDER_ADDRESS));

  const stack = useReaderStack('two-tabs');
  before(async () => {
    ({ sms, sink, sealpost, browser } = stack);
    await sendSealedMail(sealpost.ports.smtp, [ALICE, CAROL, DAVE], { subject: SUBJECT, text: 'Please answer.' });
    link = await readerLink(sink, ALICE.email, 0);
  });

  /** Signs in in a first window and opens a second one of the same session (one browser context). */
  async function twoWindows(who: {
    email: string;
    mobile: string;
  }): Promise<{ one: Page; two: Page; close(): Promise<void> }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const one = await context.newPage();
    const codesBefore = sms.messages.length;
    await requestCode(one, link, who);
    await enterCode(one, await nextCode(sms, who.mobile, codesBefore));
    await one.getByRole('heading', { name: SUBJECT }).waitFor();
    const two = await context.newPage();
    await two.goto(link);
    await two.getByRole('heading', { name: SUBJECT }).waitFor();
    return { one, two, close: () => context.close() };
  }

  const save = async (page: Page, text: string) => {
    const box = page.getByLabel(t.reply.text, { exact: true });
    await box.fill(text);
    await box.blur();
  };

  it('keeps both texts through a reload: window two shows its own and the saved one; the choice saved', async () => {
    const { one, two, close } = await twoWindows(ALICE);
    try {
      await one.locator('input[type=file]').setInputFiles(png('one.png'));
      await one.getByRole('button', { name: t.reply.remove('one.png') }).waitFor();
      await save(one, 'Typed in window one.');
      await one.getByText(t.reply.draftSaved).waitFor();

      await save(two, 'Typed in window two.');
      await heading(t.drafts.conflictTitle)(two);
      assert.equal(
        (await two.getByRole('region', { name: t.drafts.mine }).textContent())?.trim(),
        'Typed in window two.',
      );
      assert.equal(
        (await two.getByRole('region', { name: t.drafts.theirs }).textContent())?.trim(),
        'Typed in window one.',
      );
      assert.equal(await two.getByLabel(t.reply.text, { exact: true }).inputValue(), 'Typed in window two.');
      assert.equal(await two.getByLabel(t.reply.text, { exact: true }).isEditable(), false, 'held while choosing');
      // A reload keeps the choice and this window's text, which the saved draft does not hold.
      await two.reload();
      await heading(t.drafts.conflictTitle)(two);
      await two.getByRole('region', { name: t.drafts.mine }).filter({ hasText: 'Typed in window two.' }).waitFor();
      await two.getByRole('region', { name: t.drafts.theirs }).filter({ hasText: 'Typed in window one.' }).waitFor();
      assert.equal(await two.getByLabel(t.reply.text, { exact: true }).inputValue(), 'Typed in window two.');
      // The session ends while choosing; signed in again in this window, the choice and its text are still there.
      await two.context().clearCookies();
      const codesBefore = sms.messages.length;
      await requestCode(two, link, ALICE);
      await enterCode(two, await nextCode(sms, ALICE.mobile, codesBefore));
      await heading(t.drafts.conflictTitle)(two);
      await two.getByRole('region', { name: t.drafts.mine }).filter({ hasText: 'Typed in window two.' }).waitFor();
      // The file window one attached is listed in window two; one attached in window two meanwhile is kept too.
      await two.getByRole('button', { name: t.reply.remove('one.png') }).waitFor();
      await two.locator('input[type=file]').setInputFiles(png('two.png'));
      await two.getByRole('button', { name: t.reply.remove('two.png') }).waitFor();
      // Nothing is sent before the choice.
      await two.getByRole('button', { name: t.reply.send }).click();
      await two.getByRole('alert').filter({ hasText: t.drafts.conflictExplain }).waitFor();

      await two.getByRole('button', { name: t.drafts.keepBoth }).click();
      await two.getByText(t.reply.draftSaved).waitFor();
      const chosen = 'Typed in window two.\n\nTyped in window one.';
      assert.equal(await two.getByLabel(t.reply.text, { exact: true }).inputValue(), chosen);
      assert.equal(await two.getByRole('heading', { name: t.drafts.conflictTitle }).count(), 0);

      // The draft as saved: window one, loaded again, has the chosen text and the files of both windows.
      await one.reload();
      await one.getByRole('heading', { name: SUBJECT }).waitFor();
      await one.getByRole('button', { name: t.reply.remove('two.png') }).waitFor();
      assert.equal(await one.getByLabel(t.reply.text, { exact: true }).inputValue(), chosen);
      assert.equal(await one.locator('li.file').count(), 2);
    } finally {
      await close();
    }
  });

  it('takes the other text unasked when this window typed nothing since; keeps the text chosen', async () => {
    const { one, two, close } = await twoWindows(ALICE);
    try {
      // The draft of the test before: both windows start from it. Window one changes it, window two only reads.
      await save(one, 'Changed in window one only.');
      await one.getByText(t.reply.draftSaved).waitFor();
      await two.locator('input[type=file]').setInputFiles(png('three.png'));
      await two.getByRole('button', { name: t.reply.remove('three.png') }).waitFor();
      await two.getByText(t.drafts.updated).waitFor();
      assert.equal(await two.getByLabel(t.reply.text, { exact: true }).inputValue(), 'Changed in window one only.');
      assert.equal(await two.getByRole('heading', { name: t.drafts.conflictTitle }).count(), 0, 'nothing to choose');

      // Both change it again: window two keeps its own text, and that is what is saved.
      await save(one, 'Window one, again.');
      await one.getByText(t.reply.draftSaved).waitFor();
      await save(two, 'Window two, kept.');
      await heading(t.drafts.conflictTitle)(two);
      await two.getByRole('button', { name: t.drafts.keepMine }).click();
      await two.getByText(t.reply.draftSaved).waitFor();
      await one.reload();
      await one.getByRole('heading', { name: SUBJECT }).waitFor();
      assert.equal(await one.getByLabel(t.reply.text, { exact: true }).inputValue(), 'Window two, kept.');
    } finally {
      await close();
    }
  });

  it('says in window two that the reply was already sent, with its time, also after a reload', async () => {
    const { one, two, close } = await twoWindows(CAROL);
    try {
      const before = replies().length;
      await one.getByLabel(t.reply.text, { exact: true }).fill('Sent from window one.');
      await one.getByRole('button', { name: t.reply.send }).click();
      await one.getByRole('heading', { name: t.sent.title }).waitFor();
      await sink.waitUntil(() => replies().length > before, 30_000, 'the reply from window one');

      await two.getByLabel(t.reply.text, { exact: true }).fill('Typed late in window two.');
      await two.getByRole('button', { name: t.reply.send }).click();
      await heading(t.drafts.alreadySentTitle)(two);
      const said = (await two.locator('.sent-at').textContent()) ?? '';
      // "Your reply was already sent at December 7, 2026 at 3:04 PM.": the date and the time, in English.
      assert.match(said, /^Your reply was already sent at [A-Z][a-z]+ \d{1,2}, \d{4}.* \d{1,2}:\d{2}\s?[AP]M\.$/);
      assert.equal(
        await two.getByLabel(t.drafts.unsent, { exact: true }).inputValue(),
        'Typed late in window two.',
        'what window two typed is still there',
      );
      assert.equal(await two.getByRole('button', { name: t.reply.send }).count(), 0, 'no empty form to send');
      assert.equal(replies().length, before + 1, 'one reply left');
      // A reload keeps the final state and what was typed here.
      await two.reload();
      await heading(t.drafts.alreadySentTitle)(two);
      assert.equal(await two.locator('.sent-at').textContent(), said);
      assert.equal(await two.getByLabel(t.drafts.unsent, { exact: true }).inputValue(), 'Typed late in window two.');

      // A new reply from what was typed: saved as the new draft.
      await two.getByRole('button', { name: t.drafts.newReply }).click();
      await two.getByText(t.reply.draftSaved).waitFor();
      assert.equal(await two.getByLabel(t.reply.text, { exact: true }).inputValue(), 'Typed late in window two.');
      await two.getByText(/^Your last reply to this message was sent at .+\.$/).waitFor();

      // Sent from window one again while window two typed nothing since: still a way on, to an empty new reply.
      await one.reload();
      await one.getByRole('heading', { name: SUBJECT }).waitFor();
      await one.getByRole('button', { name: t.reply.send }).click();
      await one.getByRole('heading', { name: t.sent.title }).waitFor();
      await two.locator('input[type=file]').setInputFiles(png('late.png'));
      await heading(t.drafts.alreadySentTitle)(two);
      assert.equal(await two.getByLabel(t.drafts.unsent, { exact: true }).count(), 0, 'nothing typed to show');
      await two.getByRole('button', { name: t.drafts.writeReply }).click();
      await two.getByLabel(t.reply.text, { exact: true }).waitFor();
      assert.equal(await two.getByLabel(t.reply.text, { exact: true }).inputValue(), '');
    } finally {
      await close();
    }
  });

  it('has no axe violations on the choice and the already-sent states, in every language and width', async () => {
    const found: string[] = [];
    const { one, two, close } = await twoWindows(DAVE);
    try {
      await save(one, 'The other window’s words.');
      await one.getByText(t.reply.draftSaved).waitFor();
      await save(two, 'This window’s words.');
      await heading(t.drafts.conflictTitle)(two);
      // The choice survives the language switch: the page loads the draft afresh and asks again.
      await checkScreen(two, 'reply-conflict', found, async (page, t) => {
        await heading(t.drafts.conflictTitle)(page);
        await page.getByRole('region', { name: t.drafts.mine }).filter({ hasText: 'This window’s words.' }).waitFor();
      });
      await two.getByRole('button', { name: t.drafts.keepTheirs }).click();
      await two.getByText(t.reply.draftSaved).waitFor();

      await one.reload();
      await one.getByRole('heading', { name: SUBJECT }).waitFor();
      await one.getByRole('button', { name: t.reply.send }).click();
      await one.getByRole('heading', { name: t.sent.title }).waitFor();
      await save(two, 'Too late.');
      await heading(t.drafts.alreadySentTitle)(two);
      await checkScreen(two, 'reply-already-sent', found, async (page, t) => {
        await heading(t.drafts.alreadySentTitle)(page);
        await page.getByLabel(t.drafts.unsent, { exact: true }).waitFor();
      });
    } finally {
      await close();
    }
    assertNone(found);
  });
});
