import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { TEXTS } from '../web/reader/texts/index.ts';
import { assertNone, checkScreen, describeViolations, LANGUAGES, SCREENSHOTS, WIDTHS } from './support/reader-axe.ts';
import { enterCode, nextCode, readerLink, requestCode, sealFor } from './support/reader-browser.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * Sessions the recipient controls and nothing of a message before sign-in, in Chromium against
 * `sealpost start all`: another site cannot sign the recipient out through GET /logout (its confirmation
 * page's button can), "sign out everywhere" ends a second browser's session, a bidi subject and From name show
 * in their real order, the subject stays behind the code unless the operator opts in, and the notification link
 * carries no language that no one chose. axe-core on the new screens, four languages, 360 and 1280 px.
 */

const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const SUBJECT = 'Your lease, sealed';
const BIDI_SUBJECT = 'Invoice \u202Efdp.exe\u202C paid';
const HIDDEN = /[\u200B-\u200F\u202A-\u202E\u2066-\u2069\u061C\uFEFF]/;

/** Another website: a page on another host (localhost, not 127.0.0.1) whose link leads to the auth /logout. */
async function startOtherSite(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><title>Elsewhere</title><a id="go" href="${target}">A link</a>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('sessions the recipient controls, nothing of a message before sign-in (Chromium)', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let link: string;
  let elsewhere: Awaited<ReturnType<typeof startOtherSite>>;

  const stack = useReaderStack('reader-sign-out');
  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    ({ sms, sink, sealpost, browser } = stack);
    link = await sealFor(sealpost.ports.smtp, sink, ALICE, { subject: SUBJECT, text: 'The lease is attached.' });
    elsewhere = await startOtherSite(`${new URL(link).origin}/logout`);
  });
  after(async () => {
    await elsewhere?.close();
  });

  const opened = (page: Page, subject: string) =>
    page.getByRole('heading', { level: 1, name: subject }).waitFor({ timeout: 15_000 });
  const signInForm = (page: Page) =>
    page.getByRole('heading', { name: TEXTS.en.signIn.title }).waitFor({ timeout: 15_000 });

  async function signedIn(context: BrowserContext, to = link, subject = SUBJECT): Promise<Page> {
    const page = await context.newPage();
    const before = sms.messages.length;
    await requestCode(page, to, ALICE);
    await enterCode(page, await nextCode(sms, ALICE.mobile, before));
    await opened(page, subject);
    return page;
  }

  /** Follows the other site's link to /logout; the Sec-Fetch-Site Chromium sent with it. */
  async function arriveFromElsewhere(page: Page): Promise<string | undefined> {
    await page.goto(elsewhere.url);
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/logout')),
      page.locator('#go').click(),
    ]);
    await page.waitForLoadState();
    return (await request.allHeaders())['sec-fetch-site'];
  }

  it('a cross-site link to /logout leaves the session; the confirmation button does sign out', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await signedIn(context);
      const site = await arriveFromElsewhere(page);
      assert.equal(site, 'cross-site', 'Chromium told the auth service where the request came from');
      await page.getByRole('heading', { name: 'Sign out of Sealpost?' }).waitFor();
      assert.doesNotMatch(await page.content(), /signedOut/);

      // Still signed in: the message opens without a code.
      const other = await context.newPage();
      await other.goto(link);
      await opened(other, SUBJECT);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      await page.getByRole('link', { name: 'Back to your message' }).click();
      await signInForm(page);
    } finally {
      await context.close();
    }
  });

  it('opened directly, /logout signs out and shows a page, not JSON', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await signedIn(context);
      // The page is in the browser's language (Accept-Language).
      await page.setExtraHTTPHeaders({ 'accept-language': 'de-DE,de;q=0.9' });
      await page.goto(`${new URL(link).origin}/logout`);
      await page.getByRole('heading', { name: 'Sie sind abgemeldet' }).waitFor();
      assert.doesNotMatch((await page.locator('body').textContent()) ?? '', /[{}]/, 'no raw JSON');
      await page.goto(link);
      await signInForm(page);
    } finally {
      await context.close();
    }
  });

  it("sign out everywhere ends a second browser's session, and says that all ended", async () => {
    const first = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const second = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const a = await signedIn(first);
      const b = await signedIn(second);
      await a.getByRole('button', { name: TEXTS.en.sessions.signOutEverywhere }).click();
      await a.getByRole('heading', { name: TEXTS.en.sessions.signedOutEverywhere.title }).waitFor();
      await b.reload();
      await signInForm(b);

      const found: string[] = [];
      await checkScreen(a, 'signed-out-everywhere', found, (page, t) =>
        page.getByRole('heading', { name: t.sessions.signedOutEverywhere.title }).waitFor(),
      );
      assertNone(found);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('the confirmation and signed-out pages have no axe violations in four languages at 360 and 1280 px', async () => {
    const found: string[] = [];
    for (const lang of LANGUAGES) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: lang });
      try {
        const page = await context.newPage();
        // Opening the link starts a session (GET /v1/config): enough for the confirmation to be asked.
        await page.goto(link);
        await page.getByRole('heading', { name: TEXTS[lang].signIn.title }).waitFor();
        await arriveFromElsewhere(page);
        for (const [screen, button] of [
          ['logout-confirm', true],
          ['logout-done', false],
        ] as const) {
          assert.equal(await page.evaluate<string>('document.documentElement.lang'), lang, screen);
          for (const width of WIDTHS) {
            await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
            const results = await new AxeBuilder({ page }).analyze();
            found.push(...describeViolations(`${screen}, ${lang}, ${width} px`, results.violations));
            assert.ok(
              results.passes.some((r) => r.id === 'html-lang-valid'),
              `${screen} ${lang}: lang checked`,
            );
            if (width === 360)
              assert.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= 360, screen);
            await page.screenshot({ path: join(SCREENSHOTS, `a11y-${screen}-${lang}-${width}.png`) });
          }
          if (button) {
            await page.locator('button[type=submit]').click();
            await page.locator('h1').waitFor();
          }
        }
      } finally {
        await context.close();
      }
    }
    assertNone(found);
  });

  it('shows a bidi subject and a From name ending in U+202E in order, before and after sign-in', async () => {
    const before = sink.messages.length;
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: sealpost.ports.smtp, ignoreTLS: true });
    try {
      await transport.sendMail({
        from: { name: 'Dana\u202E', address: 'dana@sender.example' },
        to: ALICE.email,
        subject: BIDI_SUBJECT,
        text: 'Please pay.',
        headers: { 'X-Sealpost-Mobile': `${ALICE.email}=${ALICE.mobile}` },
      });
    } finally {
      transport.close();
    }
    const bidiLink = await readerLink(sink, ALICE.email, before);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(bidiLink);
      await signInForm(page);
      const card = (await page.locator('.message-card').textContent()) ?? '';
      assert.match(card, /dana@sender\.example/);
      assert.doesNotMatch(card, HIDDEN, 'no bidi control before sign-in');
      assert.doesNotMatch(card, /Invoice|exe/, 'and no subject');

      await page.close();
      const reading = await signedIn(context, bidiLink, 'Invoice fdp.exe paid');
      const heading = await reading.locator('h1#message-subject').textContent();
      assert.equal(heading, 'Invoice fdp.exe paid');
      const from = reading.locator('.headers dd').first();
      assert.equal(await from.textContent(), 'Dana <dana@sender.example>');
      // Drawn in order: the name, then the address to its right (an override would have drawn it reversed).
      const [name, address] = [from.locator('bdi').nth(0), from.locator('bdi').nth(1)];
      assert.equal(await address.textContent(), 'dana@sender.example');
      assert.ok((await name.boundingBox())!.x < (await address.boundingBox())!.x, 'the address follows the name');
    } finally {
      await context.close();
    }
  });

  it('shows no subject before sign-in by default, in the API and on the page', async () => {
    const messageId = new URL(link).pathname.split('/').pop()!;
    const config = await (await fetch(`${new URL(link).origin}/v1/config?messageId=${messageId}`)).json();
    assert.equal(config.subject, undefined, JSON.stringify(config));
    assert.match(config.sender, /dana@sender\.example/);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(link);
      await signInForm(page);
      assert.equal(await page.getByText(SUBJECT).count(), 0);
      assert.match((await page.locator('.message-card').textContent()) ?? '', /dana@sender\.example/);
    } finally {
      await context.close();
    }
  });

  it('the notification link names no language when none was chosen; the page adds one only when chosen', async () => {
    const notification = sink.messages.find((m) => m.to.includes(ALICE.email));
    const text = (await simpleParser(notification!.raw)).text ?? '';
    const written = /https?:\/\/\S+\/m\/[A-Za-z0-9_-]+\S*/.exec(text)?.[0];
    assert.ok(written && !written.includes('lang='), `no ?lang in ${written}`);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'de-DE' });
    try {
      const page = await context.newPage();
      await page.goto(written);
      await page.getByRole('heading', { name: TEXTS.de.signIn.title }).waitFor();
      assert.equal(new URL(page.url()).searchParams.get('lang'), null, "the browser's language, not written down");
      await page.locator('#language').selectOption('fr');
      await page.getByRole('heading', { name: TEXTS.fr.signIn.title }).waitFor();
      assert.equal(new URL(page.url()).searchParams.get('lang'), 'fr', 'a choice is kept in the address');
    } finally {
      await context.close();
    }
  });
});

describe('the subject before sign-in when the operator opts in (READER_SUBJECT_BEFORE_SIGN_IN=true, Chromium)', () => {
  const stack = useReaderStack('reader-subject-opt-in', { READER_SUBJECT_BEFORE_SIGN_IN: 'true' });

  it('shows the subject, cleaned of bidi controls, on the sign-in screen', async () => {
    const link = await sealFor(stack.sealpost.ports.smtp, stack.sink, ALICE, { subject: BIDI_SUBJECT, text: 'Pay.' });
    const context = await stack.browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(link);
      await page.getByRole('heading', { name: TEXTS.en.signIn.title }).waitFor();
      const card = (await page.locator('.message-card').textContent()) ?? '';
      assert.match(card, /Invoice fdp\.exe paid/);
      assert.doesNotMatch(card, HIDDEN);
    } finally {
      await context.close();
    }
  });
});
