import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { enterCode, nextCode, readerLink, requestCode, sendSealedMail } from './support/reader-browser.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * The sender's page on the real stack (the three services): Dana seals a message to Alice and Carol by mail; Alice
 * reads it and replies; Dana signs in at /sent with the code her mail brought, sees Alice's opening and reply and
 * Carol's notification only, withdraws for Carol, and Carol's open tab learns it at its next request; the trail,
 * as CSV and JSON from the page and from the seal service's admin API, holds the events in order.
 */

const DANA = 'dana@sender.example';
const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const CAROL = { email: 'carol@example.com', mobile: '+41791234568' };
const SUBJECT = 'The lease, sealed for two';
const ADMIN = 'sender-stack-admin-token';

describe("the sender's page on the real stack (Chromium)", () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  const stack = useReaderStack('sender-stack', { DELIVERY_RETRY_BASE: '1s', ADMIN_TOKEN: ADMIN });
  before(() => {
    ({ sms, sink, sealpost, browser } = stack);
  });

  const newPage = async (): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser.newContext({ locale: 'en-US', timezoneId: 'UTC', acceptDownloads: true });
    return { context, page: await context.newPage() };
  };
  const text = (page: Page, selector = 'main') =>
    // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the sender sees
    page.locator(selector).innerText();

  it('shows who opened what, withdraws for one recipient, whose open tab then says so, exports the trail', async () => {
    const before = sink.messages.length;
    await sendSealedMail(sealpost.ports.smtp, [ALICE, CAROL], { subject: SUBJECT, text: 'Please sign the lease.' });
    const aliceLink = await readerLink(sink, ALICE.email, before);
    const carolLink = await readerLink(sink, CAROL.email, before);

    const alice = await newPage();
    const carol = await newPage();
    const dana = await newPage();
    try {
      const sent = sms.messages.length;
      await requestCode(alice.page, aliceLink, ALICE);
      await enterCode(alice.page, await nextCode(sms, ALICE.mobile, sent));
      await alice.page.getByRole('heading', { name: SUBJECT }).waitFor();
      await alice.page.getByLabel('Your reply').fill('Signed, here it is.');
      await alice.page.getByRole('button', { name: 'Send reply' }).click();
      await alice.page.getByRole('heading', { name: 'Your reply was sent' }).waitFor({ timeout: 15_000 });
      // Carol's tab waits on the sign-in form.
      await carol.page.goto(carolLink);
      await carol.page.getByLabel('Email address').waitFor();

      const mails = sink.messages.length;
      await dana.page.goto(`${sealpost.urls.auth}/sent`);
      await dana.page.getByLabel('Your email address').fill(DANA);
      await dana.page.getByRole('button', { name: 'Send me a code' }).click();
      await dana.page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      await sink.waitUntil(() => sink.messages.slice(mails).some((m) => m.to.includes(DANA)), 20_000, 'the code');
      const mail = sink.messages.slice(mails).find((m) => m.to.includes(DANA))!;
      const code = /code is (\d{6})/.exec(mail.raw.toString())?.[1];
      assert.ok(code, 'a code in the mail');
      await dana.page.getByLabel('Code', { exact: true }).fill(code);
      await dana.page.getByRole('button', { name: 'Sign in' }).click();
      await dana.page.locator('main[data-screen="sender-list"]').waitFor();
      await dana.page.getByRole('button', { name: new RegExp(SUBJECT) }).click();
      await dana.page.getByRole('heading', { name: SUBJECT, level: 1 }).waitFor();

      const timeline = async (email: string) => {
        const item = dana.page.locator('.recipient', { has: dana.page.getByRole('heading', { name: email }) });
        const labels = await item.locator('dt').allInnerTexts();
        const values = await item.locator('dd').allInnerTexts();
        return Object.fromEntries(labels.map((label, i) => [label, values[i]]));
      };
      const aliceRow = await timeline(ALICE.email);
      const carolRow = await timeline(CAROL.email);
      assert.notEqual(aliceRow['First opened'], 'Never', JSON.stringify(aliceRow));
      assert.equal(aliceRow['Replies sent'], '1', JSON.stringify(aliceRow));
      assert.equal(carolRow['First opened'], 'Never');
      assert.notEqual(carolRow.Notified, 'Not yet', JSON.stringify(carolRow));

      await dana.page.getByRole('button', { name: `Withdraw for ${CAROL.email}`, exact: true }).click();
      await dana.page.getByRole('textbox', { name: 'Reason' }).fill('Sent to the wrong Carol');
      await dana.page.getByRole('button', { name: `Yes, withdraw for ${CAROL.email}` }).click();
      await dana.page.getByRole('status').getByText(`The message was withdrawn for ${CAROL.email}.`).waitFor();
      assert.ok((await timeline(CAROL.email)).Withdrawn, 'withdrawn for Carol');
      assert.equal(
        await dana.page.getByRole('button', { name: `Withdraw for ${ALICE.email}`, exact: true }).count(),
        1,
        'Alice reads on',
      );

      // Carol's tab, at its next request.
      await carol.page.getByLabel('Email address').fill(CAROL.email);
      await carol.page.getByLabel(/Mobile number/).fill(CAROL.mobile);
      await carol.page.getByRole('button', { name: 'Send me a code' }).click();
      await carol.page.getByRole('heading', { name: 'This message was withdrawn' }).waitFor();

      const [csv] = await Promise.all([
        dana.page.waitForEvent('download'),
        dana.page.getByRole('link', { name: 'Download the trail as CSV' }).click(),
      ]);
      const events = (await readFile((await csv.path())!, 'utf8'))
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.split(',')[1]);
      assert.equal(events[0], 'sealed');
      const order = ['notified', 'code_sent', 'sign_in_succeeded', 'opened', 'reply_sent', 'withdrawn'];
      const at = order.map((event) => events.indexOf(event));
      assert.ok(
        at.every((i) => i > 0),
        `every event there: ${events.join(' ')}`,
      );
      assert.deepEqual(
        [...at].sort((a, b) => a - b),
        at,
        `in order: ${events.join(' ')}`,
      );
      assert.match(await text(dana.page, '.end-date'), /./);

      // The same events as JSON from the page, and from the seal service's admin API in both forms.
      const [json] = await Promise.all([
        dana.page.waitForEvent('download'),
        dana.page.getByRole('link', { name: 'Download the trail as JSON' }).click(),
      ]);
      const fromPage = JSON.parse(await readFile((await json.path())!, 'utf8')) as { trail: Array<{ event: string }> };
      assert.deepEqual(
        fromPage.trail.map((entry) => entry.event),
        events,
      );
      const id = /\/m\/([0-9a-f-]{36})/.exec(aliceLink)![1];
      const admin = (accept: string) =>
        fetch(`${sealpost.urls.seal}/v1/admin/sealed/${id}/trail`, {
          headers: { authorization: `Bearer ${ADMIN}`, accept },
        });
      const adminJson = (await (await admin('application/json')).json()) as { trail: Array<{ event: string }> };
      assert.deepEqual(
        adminJson.trail.map((entry) => entry.event),
        events,
      );
      const adminCsv = await (await admin('text/csv')).text();
      assert.deepEqual(
        adminCsv
          .trim()
          .split('\n')
          .slice(1)
          .map((line) => line.split(',')[1]),
        events,
      );
    } finally {
      await alice.context.close();
      await carol.context.close();
      await dana.context.close();
    }
  });
});
