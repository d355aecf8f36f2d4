import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import type { Browser, Page } from 'playwright-core';
import { enterCode, nextCode, readerLink, requestCode, sendSealedMail } from './support/reader-browser.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * The reply form in Chromium against `sealpost start all`, on the two ways a reply used to go wrong: a
 * click on "Send reply" right after typing (the save status appearing moved the button between press
 * and release, and the click was lost), and two windows of one reader (the second sent the reply again,
 * without the file it showed). Whatever leaves is counted at the SMTP sink.
 */

const SENDER_ADDRESS = 'dana@sender.example';
const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const CAROL = { email: 'carol@example.com', mobile: '+41791234568' };
const SUBJECT = 'Your contract, sealed';
const ADMIN = 'test-admin-token';
/** A PNG signature and then bytes: passes the magic-byte check. */
const PICTURE = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(3000, 7)]);

/**
 * Waits until the exchange engine's queue (GET /v1/admin/queue) holds no envelope: every one was delivered or failed.
 */
async function queueEmpty(sealpost: SealpostProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${sealpost.urls.exchange}/v1/admin/queue`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const { envelopes } = (await response.json()) as { envelopes: unknown[] };
    if (envelopes.length === 0) return;
    if (Date.now() > deadline) throw new Error(`the exchange queue still holds ${envelopes.length} envelopes`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function signIn(
  page: Page,
  sms: SmsCapture,
  link: string,
  who: { email: string; mobile: string },
): Promise<void> {
  const before = sms.messages.length;
  await requestCode(page, link, who);
  await enterCode(page, await nextCode(sms, who.mobile, before));
  await page.getByRole('heading', { name: SUBJECT }).waitFor();
}

describe('the reply form in Chromium: no lost click, no second reply', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let link: string;

  /** Replies that reached the SMTP sink (to the sealed message's sender). */
  const replies = () => sink.messages.filter((m) => m.to.includes(SENDER_ADDRESS));

  const stack = useReaderStack('reply', { DELIVERY_RETRY_BASE: '1s', ADMIN_TOKEN: ADMIN });
  before(async () => {
    ({ sms, sink, sealpost, browser } = stack);
    await sendSealedMail(sealpost.ports.smtp, [ALICE, CAROL], {
      subject: SUBJECT,
      text: 'Please sign and send it back.',
    });
    link = await readerLink(sink, ALICE.email, 0);
  });

  it('sends when "Send reply" is pressed 100 ms after typing; the save status does not move the button', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await signIn(page, sms, link, ALICE);
      const text = page.getByLabel('Your reply');
      const send = page.getByRole('button', { name: 'Send reply' });
      await send.scrollIntoViewIfNeeded();
      // Every change of the status line (the element the text box names in aria-describedby) is
      // recorded with where the send button is at that moment.
      // A string, not a function: tsx would wrap named functions in a helper the page does not have.
      await page.evaluate(`(() => {
        const area = document.querySelector('textarea');
        const status = document.getElementById(area.getAttribute('aria-describedby'));
        const button = Array.from(document.querySelectorAll('button')).find((b) => b.textContent === 'Send reply');
        const seen = [];
        const record = () => {
          const box = button.getBoundingClientRect();
          seen.push({ status: status.textContent ?? '', top: box.top + window.scrollY, left: box.left });
        };
        record();
        new MutationObserver(record).observe(status, { childList: true, characterData: true, subtree: true });
        window.statusSeen = seen;
      })()`);
      const before = await send.boundingBox();
      assert.ok(before);

      const mailsBefore = replies().length;
      await text.click();
      await text.pressSequentially('Signed and sent back, thank you.', { delay: 5 });
      await page.waitForTimeout(100);
      // A press and a release, as a hand does it: the press blurs the text box, which starts the save.
      await page.mouse.move(before.x + before.width / 2, before.y + before.height / 2);
      await page.mouse.down();
      await page.waitForFunction(() =>
        (window as unknown as { statusSeen: Array<{ status: string }> }).statusSeen.some(
          (s) => s.status === 'Saving draft…',
        ),
      );
      const pressed = await send.boundingBox();
      await page.waitForTimeout(60);
      await page.mouse.up();

      await page.getByRole('heading', { name: 'Your reply was sent' }).waitFor({ timeout: 15_000 });
      assert.deepEqual(pressed, before, 'the button did not move while the status line appeared');
      const seen = await page.evaluate(
        () => (window as unknown as { statusSeen: Array<{ status: string; top: number; left: number }> }).statusSeen,
      );
      assert.ok(
        seen.some((s) => s.status === 'Saving draft…'),
        JSON.stringify(seen),
      );
      for (const s of seen)
        assert.deepEqual(
          [s.top, s.left],
          [seen[0]!.top, seen[0]!.left],
          `the button moved when the status became ${JSON.stringify(s.status)}`,
        );

      await sink.waitUntil(() => replies().length > mailsBefore, 30_000, 'the reply at the sink');
      const reply = await simpleParser(replies().at(-1)!.raw);
      assert.match(reply.text ?? '', /Signed and sent back, thank you\./);
    } finally {
      await context.close();
    }
  });

  it('two windows: B sends, A sends again and is told the reply was already sent, when; one reply leaves', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const a = await context.newPage();
    try {
      await signIn(a, sms, link, CAROL);
      await a.getByLabel('Your reply').fill('Here is the signed copy.');
      await a.locator('input[type=file]').setInputFiles({ name: 'signed.png', mimeType: 'image/png', buffer: PICTURE });
      await a.getByRole('button', { name: 'Remove signed.png' }).waitFor();
      await a.getByLabel('Your reply').blur();
      await a.getByText('Draft saved.').waitFor();

      // Window B: the same session (one browser context), the same draft.
      const b = await context.newPage();
      await b.goto(link);
      await b.getByRole('heading', { name: SUBJECT }).waitFor();
      await b.getByRole('button', { name: 'Remove signed.png' }).waitFor();
      assert.equal(await b.getByLabel('Your reply').inputValue(), 'Here is the signed copy.');

      const mailsBefore = replies().length;
      await b.getByRole('button', { name: 'Send reply' }).click();
      await b.getByRole('heading', { name: 'Your reply was sent' }).waitFor();
      await sink.waitUntil(() => replies().length > mailsBefore, 30_000, 'the reply from window B at the sink');
      const first = await simpleParser(replies().at(-1)!.raw);
      assert.deepEqual(
        first.attachments.map((file) => file.filename),
        ['signed.png'],
      );

      // Window A still shows the file and the text, and sends again.
      await a.bringToFront();
      assert.equal(await a.locator('li.file').count(), 1);
      await a.getByRole('button', { name: 'Send reply' }).click();
      await a.getByRole('heading', { name: 'Your reply was already sent' }).waitFor();
      await a.getByText(/^Your reply was already sent at .+\.$/).waitFor();
      assert.equal(await a.getByRole('heading', { name: 'Your reply was sent' }).count(), 0, 'A did not send');
      // A final state, not a form: nothing to send again, and the sent file is no longer shown.
      assert.equal(await a.getByRole('button', { name: 'Send reply' }).count(), 0);
      assert.equal(await a.locator('li.file').count(), 0, 'the sent file is no longer shown');

      // Nothing more leaves: the exchange engine's queue holds no mail waiting to go.
      await queueEmpty(sealpost);
      assert.equal(replies().length, mailsBefore + 1, 'exactly one reply reached the sink');
    } finally {
      await context.close();
    }
  });
});
