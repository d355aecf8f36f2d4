import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { type MailContent, nextCode, readerLink, sendSealedMail, wrongCode } from './support/reader-browser.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { CHROMIUM, CHROMIUM_ARGS, useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';

/**
 * The reader page in a real browser (Debian's Chromium through playwright-core) against Sealpost
 * started as `sealpost start all` on its embedded defaults: mail in over SMTP, the link from the
 * notification, sign-in with the code from the SMS capture (or, for a recipient without a mobile
 * number, from the code email at the SMTP sink), reading, a reply with an attachment that arrives at the
 * SMTP sink byte for byte. Screenshots of every screen go to test-output/screenshots; at 360 px each
 * screen must fit without sideways scrolling.
 */

const SCREENSHOTS = fileURLToPath(new URL('../test-output/screenshots/', import.meta.url));
const WIDTHS = [1280, 360] as const;
/** Start-up runs the migrations of three services: generous, for a busy test machine. */

const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const CAROL = { email: 'carol@example.com', mobile: '+41791234568' };
const DAVE = { email: 'dave@example.com', mobile: '+41791234569' };
const ERIN = { email: 'erin@example.com', mobile: '+41791234560' };
/** No mobile number on record: signs in with a code by email. */
const FRANK = { email: 'frank@example.com' };
const SUBJECT = 'Your contract, sealed';
const BODY_LINE = 'Please find the signed contract attached.';

/** A PNG header and then pseudo-random bytes: passes a magic-byte check, and any change shows. */
function sampleFile(size: number): Buffer {
  const bytes = Buffer.alloc(size);
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').copy(bytes);
  let x = 0x2545f491;
  for (let i = 16; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

async function launchPersistent(userDataDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
}

/**
 * Full-page screenshots of what the page shows now, at each width; back to 1280 after. At 360 px the
 * screen must fit: nothing wider than the phone, no sideways scrolling.
 */
async function shoot(page: Page, name: string, widths: readonly number[] = WIDTHS): Promise<void> {
  for (const width of widths) {
    await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
    await page.waitForTimeout(50);
    if (width === 360)
      assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360, `${name}: wider than 360 px`);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** Clicks a download link and returns the bytes the browser saved. */
async function download(page: Page, name: RegExp): Promise<Buffer> {
  const [saved] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name }).click()]);
  const path = await saved.path();
  return readFile(path);
}

/** The draft as the service has it, asked by the page itself (its session cookie). */
async function draftFileNames(page: Page): Promise<string[]> {
  return page.evaluate(async () => {
    const response = await fetch('/v1/message/reply', { headers: { accept: 'application/json' } });
    const draft = (await response.json()) as { files: Array<{ name: string }> };
    return draft.files.map((file) => file.name).sort();
  });
}

const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** The message all four recipients get: HTML with a remote image, and `attachment` as contract.png. */
function contractMail(attachment: Buffer): MailContent {
  return {
    subject: SUBJECT,
    text: `Hello,\n\n${BODY_LINE}\n\nKind regards,\nDana`,
    html:
      `<p>Hello,</p><p><strong>${BODY_LINE}</strong></p>` +
      // A remote image: the reader must not load it unless asked (it is never asked to here).
      '<p><img src="https://images.example.invalid/logo.png" alt="Logo"></p><p>Kind regards,<br>Dana</p>',
    attachments: [{ filename: 'contract.png', content: attachment, contentType: 'image/png' }],
  };
}

const INVOICE_SUBJECT = 'Your invoice, sealed';
const INVOICE_PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const PHOTO = sampleFile(3000);

/**
 * HTML with a picture it shows (cid:) and, as Apple Mail sends them, a PDF and a photo with
 * Content-Disposition: inline that the HTML does not show: those two must be offered for download.
 */
const INVOICE_MAIL: MailContent = {
  subject: INVOICE_SUBJECT,
  text: 'Your invoice is attached.',
  html: '<p>Your invoice is attached.</p><p><img src="cid:logo@sender.example" alt="Sender logo"></p>',
  attachments: [
    { filename: 'logo.png', content: TINY_PNG, contentType: 'image/png', cid: 'logo@sender.example' },
    { filename: 'invoice.pdf', content: INVOICE_PDF, contentType: 'application/pdf', contentDisposition: 'inline' },
    { filename: 'photo.png', content: PHOTO, contentType: 'image/png', contentDisposition: 'inline' },
  ],
};

/** The code of the newest code email to `to` beyond the `before` first messages at the sink. */
async function nextEmailCode(sink: SmtpSink, to: string, before: number): Promise<string> {
  const isCodeMail = (m: SmtpSink['messages'][number]) =>
    m.to.includes(to) && m.raw.toString().includes('Your Sealpost code is');
  await sink.waitUntil(() => sink.messages.slice(before).some(isCodeMail), 10_000, `the code email to ${to}`);
  const parsed = await simpleParser(sink.messages.slice(before).filter(isCodeMail).at(-1)!.raw);
  const code = /Your Sealpost code is (\d+)/.exec(parsed.text ?? '')?.[1];
  assert.ok(code, parsed.text);
  return code;
}

/** The name attribute of the focused element. */
const focusedName = (page: Page) =>
  page.evaluate(() => document.activeElement?.getAttribute('name') ?? document.activeElement?.textContent ?? '');

/** Email, mobile, "send me a code", without waiting for the code screen (a refusal may come instead). */
async function askForCode(page: Page, link: string, who: { email: string; mobile: string }): Promise<void> {
  await page.goto(link);
  await page.getByLabel('Email address').fill(who.email);
  await page.getByLabel(/Mobile number/).fill(who.mobile);
  await page.getByRole('button', { name: 'Send me a code' }).click();
}

async function signIn(
  page: Page,
  sms: SmsCapture,
  link: string,
  who: { email: string; mobile: string },
  remember: boolean,
): Promise<void> {
  const before = sms.messages.length;
  await askForCode(page, link, who);
  await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
  await page.getByLabel('Code', { exact: true }).fill(await nextCode(sms, who.mobile, before));
  if (remember) await page.getByLabel('Keep me signed in on this device').check();
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: SUBJECT }).waitFor();
}

describe('the reader page in Chromium', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let link: string;
  let invoiceLink: string;
  const dirs: string[] = [];
  const attachment = sampleFile(180_000);

  // The default wait between two codes to one number: a test asks for a new one too soon.
  const stack = useReaderStack('reader', { DELIVERY_RETRY_BASE: '1s', SMS_LIMIT_NUMBER_INTERVAL: '60s' });
  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    ({ sms, sink, sealpost, browser } = stack);
    await sendSealedMail(sealpost.ports.smtp, [ALICE, CAROL, DAVE, ERIN], contractMail(attachment));
    // Frank was given no mobile number: he signs in with a code by email.
    await sendSealedMail(sealpost.ports.smtp, [{ email: FRANK.email }], INVOICE_MAIL);
    link = await readerLink(sink, ALICE.email, 0);
    invoiceLink = await readerLink(sink, FRANK.email, 0);
  });

  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('serves the page at /m/{id} with a strict Content-Security-Policy and its files with long caching', async () => {
    const page = await fetch(link);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    const html = await page.text();
    const script = /src="(\/reader\/app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    assert.ok(script, html);
    const asset = await fetch(new URL(script, link));
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    await asset.arrayBuffer();
  });

  it('says so in a sentence when the link names no sealed message', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(new URL('/m/no-such-message', link).href);
      await page.getByRole('heading', { name: 'This message cannot be shown' }).waitFor();
      await page
        .getByRole('alert')
        .filter({ hasText: 'This message does not exist or is no longer available' })
        .waitFor();
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
      assert.doesNotMatch(await page.locator('main').innerText(), /[{}]|not_found/, 'no raw error object on the page');
      await shoot(page, 'not-found');
    } finally {
      await context.close();
    }
  });

  it('signs in by SMS (a wrong code first), reads the verified message, replies with a file intact', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const blockedRequests: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(new URL(link).origin) && !request.url().startsWith('data:'))
        blockedRequests.push(request.url());
    });
    try {
      await page.goto(link);
      await page.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
      // Who sent it before sign-in, from GET /v1/config; the subject stays behind the code
      // (READER_SUBJECT_BEFORE_SIGN_IN).
      await assertVisibleText(page, 'dana@sender.example');
      assert.equal(await page.getByText(SUBJECT).count(), 0, 'no subject before sign-in');
      await shoot(page, 'sign-in');

      const before = sms.messages.length;
      await page.getByLabel('Email address').fill(ALICE.email);
      await page.getByLabel(/Mobile number/).fill('+41 79 123 45 67');
      await page.getByRole('button', { name: 'Send me a code' }).click();
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      const code = await nextCode(sms, ALICE.mobile, before);
      const codeInput = page.getByLabel('Code', { exact: true });
      assert.equal(await codeInput.getAttribute('inputmode'), 'numeric');
      assert.equal(await codeInput.getAttribute('autocomplete'), 'one-time-code');
      // The focus moved to the new screen's heading.
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Enter your code');
      // Resend waits out the per-number interval (SMS_LIMIT_NUMBER_INTERVAL, 60 s by default).
      assert.equal(await page.getByRole('button', { name: 'Send a new code' }).isDisabled(), true);
      await assertVisibleText(page, /You can ask for a new code in \d+ seconds?\./);
      await shoot(page, 'code');

      await codeInput.fill(wrongCode(code));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'That code is not right' }).waitFor();
      assert.equal(await codeInput.getAttribute('aria-invalid'), 'true');
      await shoot(page, 'code-wrong');

      await codeInput.fill(code);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
      await assertVisibleText(page, /Sealed on .+ — content verified against IPFS CID (Qm|bafy)[A-Za-z0-9]+\./);
      const frame = page.frameLocator('iframe.body-frame');
      await frame.getByText(BODY_LINE).waitFor();
      assert.equal(
        await page.locator('iframe.body-frame').getAttribute('sandbox'),
        'allow-same-origin allow-popups allow-popups-to-escape-sandbox',
      );
      await assertVisibleText(page, /One image from the internet is not shown/);
      await page.getByRole('link', { name: /Download contract\.png/ }).waitFor();
      await shoot(page, 'message');
      assert.ok(
        (await download(page, /Download contract\.png/)).equals(attachment),
        'the download is the attachment byte for byte',
      );

      // Remote images only when asked for; answered here by the test, so nothing leaves the machine.
      assert.deepEqual(blockedRequests, [], 'nothing was loaded from elsewhere before "show images"');
      await page.route('https://images.example.invalid/**', (route) =>
        route.fulfill({ contentType: 'image/png', body: TINY_PNG }),
      );
      await page.getByRole('button', { name: 'Show images' }).click();
      await page.waitForFunction(() => {
        const frame = document.querySelector<HTMLIFrameElement>('iframe.body-frame');
        const image = frame?.contentDocument?.querySelector('img');
        return image?.complete === true && image.naturalWidth > 0;
      });
      assert.deepEqual(blockedRequests, ['https://images.example.invalid/logo.png']);
      blockedRequests.length = 0;

      // Start a reply, attach a file, leave and come back: the draft is still there.
      await assertVisibleText(page, 'Up to 17 MB per file and 17 MB in total.');
      await page.getByLabel('Your reply').fill('Thank you, signed copy attached.');
      // A slow uplink (Chromium's network emulation) so that the progress bar is seen moving.
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.emulateNetworkConditions', {
        offline: false,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: 60 * 1024,
      });
      await page
        .locator('input[type=file]')
        .setInputFiles({ name: 'signed.png', mimeType: 'image/png', buffer: attachment });
      await page.waitForFunction(() => {
        const bar = document.querySelector<HTMLProgressElement>('li.file.uploading progress');
        return bar !== null && bar.value > 0 && bar.value < 100;
      });
      await shoot(page, 'reply-uploading');
      await page
        .locator('li.file')
        .filter({ hasText: 'signed.png' })
        .getByRole('button', { name: 'Remove signed.png' })
        .waitFor();
      await cdp.send('Network.emulateNetworkConditions', {
        offline: false,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: -1,
      });

      // A second file, removed again: gone from the page and from the draft on the server.
      await page
        .locator('input[type=file]')
        .setInputFiles({ name: 'wrong-page.png', mimeType: 'image/png', buffer: sampleFile(3000) });
      await page.getByRole('button', { name: 'Remove wrong-page.png' }).waitFor();
      assert.deepEqual(await draftFileNames(page), ['signed.png', 'wrong-page.png']);
      await page.getByRole('button', { name: 'Remove wrong-page.png' }).click();
      await page.locator('li.file').filter({ hasText: 'wrong-page.png' }).waitFor({ state: 'detached' });
      assert.deepEqual(await draftFileNames(page), ['signed.png']);

      await page.getByLabel('Your reply').blur();
      await page.getByText('Draft saved.').waitFor();
      await shoot(page, 'reply');
      await page.reload();
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
      assert.equal(await page.getByLabel('Your reply').inputValue(), 'Thank you, signed copy attached.');
      await page.getByRole('button', { name: 'Remove signed.png' }).waitFor();
      assert.equal(await page.locator('li.file').count(), 1, 'the removed file did not come back');

      const mailsBefore = sink.messages.length;
      await page.getByRole('button', { name: 'Send reply' }).click();
      await page.getByRole('heading', { name: 'Your reply was sent' }).waitFor();
      await shoot(page, 'sent');

      await sink.waitUntil(
        () => sink.messages.slice(mailsBefore).some((m) => m.to.includes('dana@sender.example')),
        30_000,
        'the reply at the sink',
      );
      const reply = await simpleParser(
        sink.messages.slice(mailsBefore).find((m) => m.to.includes('dana@sender.example'))!.raw,
      );
      assert.match(reply.text ?? '', /Thank you, signed copy attached\./);
      assert.equal(reply.attachments.length, 1);
      assert.equal(reply.attachments[0]!.filename, 'signed.png');
      assert.ok(reply.attachments[0]!.content.equals(attachment), 'the attachment arrived byte for byte');

      // Signing out that did not reach the server says so: the session is still alive.
      const logout = `${new URL(link).origin}/logout`;
      await page.route(logout, (route) => route.abort('connectionrefused'));
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'You are still signed in' }).waitFor();
      assert.equal(await page.getByRole('heading', { name: 'You are signed out' }).count(), 0);
      await page.unroute(logout);

      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      await shoot(page, 'signed-out');
      // The server ended the session: the same link asks for a code again.
      await page.reload();
      await page.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
      assert.deepEqual(blockedRequests, [], 'nothing else was loaded from elsewhere');
    } finally {
      await context.close();
    }
  });

  it('signs in by keyboard alone with a code by email, and lists the inline files the HTML does not show', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(invoiceLink);
      await page.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
      // No mobile number on record: no field for one, and the code comes by email.
      assert.equal(await page.getByLabel(/Mobile number/).count(), 0);
      await assertVisibleText(page, 'We will send you a one-time code by email.');
      await shoot(page, 'sign-in-email');

      // Only Tab, typing and Enter, from the heading the page focuses.
      const before = sink.messages.length;
      await page.keyboard.press('Tab');
      assert.equal(await focusedName(page), 'email');
      await page.keyboard.type(FRANK.email);
      await page.keyboard.press('Tab');
      assert.equal(await focusedName(page), 'Send me a code');
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      await assertVisibleText(page, `We sent a 6-digit code by email to ${FRANK.email}.`);
      const code = await nextEmailCode(sink, FRANK.email, before);
      // First the way to correct the address the sentence names, then the code.
      await page.keyboard.press('Tab');
      assert.equal(await focusedName(page), 'Use a different address');
      await page.keyboard.press('Tab');
      assert.equal(await focusedName(page), 'code');
      await page.keyboard.type(code);
      await page.keyboard.press('Tab');
      assert.equal(await focusedName(page), 'rememberMe');
      await page.keyboard.press('Tab');
      assert.equal(await focusedName(page), 'Sign in');
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: INVOICE_SUBJECT }).waitFor();

      // The picture the HTML shows is in the frame and not listed again; the inline PDF and photo are.
      await page.waitForFunction(() => {
        const image = document
          .querySelector<HTMLIFrameElement>('iframe.body-frame')
          ?.contentDocument?.querySelector('img');
        return image?.complete === true && image.naturalWidth > 0;
      });
      await page.getByRole('link', { name: /Download invoice\.pdf/ }).waitFor();
      await page.getByRole('link', { name: /Download photo\.png/ }).waitFor();
      assert.equal(await page.getByRole('link', { name: /Download logo\.png/ }).count(), 0);
      await shoot(page, 'message-inline-files');
      assert.ok(
        (await download(page, /Download invoice\.pdf/)).equals(INVOICE_PDF),
        'the inline PDF downloads byte for byte',
      );
    } finally {
      await context.close();
    }
  });

  it('says the code sent moments ago still works, with the wait from Retry-After, if asked too soon', async () => {
    // ALICE got a code moments ago: the per-number interval (60 s) has not passed. That is a wait, not "too many".
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await askForCode(page, link, ALICE);
      await page
        .getByText(/A code was sent a moment ago and still works\. You can ask for a new one in \d+ seconds?\./)
        .waitFor();
      assert.equal(await page.getByRole('button', { name: 'Send me a code' }).isDisabled(), true);
      assert.equal(await page.getByText('Too many codes were asked for').count(), 0, 'not the hourly limit');
      await shoot(page, 'rate-limit');
    } finally {
      await context.close();
    }
  });

  it('keeps a "keep me signed in" session across a browser restart, but not a plain one', async () => {
    const rememberedDir = await mkdtemp(join(tmpdir(), 'sealpost-chromium-'));
    const plainDir = await mkdtemp(join(tmpdir(), 'sealpost-chromium-'));
    dirs.push(rememberedDir, plainDir);

    let context = await launchPersistent(rememberedDir);
    await signIn(context.pages()[0] ?? (await context.newPage()), sms, link, CAROL, true);
    await context.close();
    context = await launchPersistent(rememberedDir);
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(link);
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
    } finally {
      await context.close();
    }

    context = await launchPersistent(plainDir);
    await signIn(context.pages()[0] ?? (await context.newPage()), sms, link, DAVE, false);
    await context.close();
    context = await launchPersistent(plainDir);
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(link);
      await page.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
    } finally {
      await context.close();
    }
  });
});

describe('the reader page with short-lived codes and no resend interval', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let link: string;
  const file = sampleFile(4000);

  const stack = useReaderStack('reader-short', {
    // The services' clock is moved by the test (advanceClock), so the code expires without waiting.
    NODE_ENV: 'test',
    SMS_CODE_EXPIRATION: '3s',
    // Limits of its own: the page must show the service's, not the defaults.
    ATTACHMENT_MAX_SIZE: '3MiB',
    REPLY_MAX_TOTAL_SIZE: '5MiB',
  });
  before(async () => {
    ({ sms, sink, sealpost, browser } = stack);
    await sendSealedMail(sealpost.ports.smtp, [ALICE], contractMail(sampleFile(2000)));
    link = await readerLink(sink, ALICE.email, 0);
  });

  it('says the code has expired, sends a new one on request, and signs in with that', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      let before = sms.messages.length;
      await askForCode(page, link, ALICE);
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      await assertVisibleText(page, 'The code is valid for 3 seconds.');
      const expired = await nextCode(sms, ALICE.mobile, before);
      await sealpost.advanceClock(3_100);
      const codeInput = page.getByLabel('Code', { exact: true });
      await codeInput.fill(expired);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'This code has expired' }).waitFor();
      // One sentence, one way on: the button for a new code, where it was, with the focus on it; the spent code
      // cannot be tried again.
      const resend = page.getByRole('button', { name: 'Send a new code' });
      assert.equal(await resend.count(), 1, 'one button for a new code');
      assert.equal(await resend.evaluate((button) => button === document.activeElement), true);
      assert.equal(await codeInput.isDisabled(), true);
      await shoot(page, 'code-expired');

      before = sms.messages.length;
      await resend.click();
      await page.getByText('A new code is on its way.').waitFor();
      await codeInput.fill(await nextCode(sms, ALICE.mobile, before));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: SUBJECT }).waitFor();

      // A draft to continue on the other device (next test).
      await page.getByLabel('Your reply').fill('Started on my laptop.');
      await page.locator('input[type=file]').setInputFiles({ name: 'scan.png', mimeType: 'image/png', buffer: file });
      await page.getByRole('button', { name: 'Remove scan.png' }).waitFor();
      await page.getByLabel('Your reply').blur();
      await page.getByText('Draft saved.').waitFor();

      // A file the service refuses, with the sentence for its errorCode (forbidden_file_type).
      const program = Buffer.concat([
        Buffer.from('MZ'),
        Buffer.alloc(62, 0),
        Buffer.from('PE\0\0'),
        Buffer.alloc(512, 1),
      ]);
      await page
        .locator('input[type=file]')
        .setInputFiles({ name: 'tool.exe', mimeType: 'application/octet-stream', buffer: program });
      await page.locator('li.file.failed').getByText('This kind of file cannot be attached').waitFor();
      await shoot(page, 'reply-refused-file');
    } finally {
      await context.close();
    }
  });

  it('restores the draft, text and files, when the reader signs in on another device', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    try {
      // The draft does not load at first: no form that could overwrite it, a way to try again.
      // The page names its message in every request (?messageId=): match the path, whatever the query.
      const draftUrl = new RegExp(`^${new URL(link).origin}/v1/message/reply(\\?|$)`);
      await page.route(draftUrl, (route) =>
        route.request().method() === 'GET'
          ? route.fulfill({
              status: 503,
              contentType: 'application/json',
              body: JSON.stringify({ id: 'e2e', kind: 503, errorCode: 'unavailable', message: 'test' }),
            })
          : route.continue(),
      );
      await signIn(page, sms, link, ALICE, false);
      await page.getByRole('alert').filter({ hasText: 'Your saved reply could not be loaded' }).waitFor();
      assert.equal(await page.getByLabel('Your reply').count(), 0, 'no reply box to autosave from');
      assert.equal(await page.getByRole('button', { name: 'Send reply' }).count(), 0, 'no sending without the draft');
      await page.unroute(draftUrl);
      await page.getByRole('button', { name: 'Try again' }).click();

      await page.getByText('Your unsent draft was restored.').waitFor();
      assert.equal(await page.getByLabel('Your reply').inputValue(), 'Started on my laptop.');
      await page.getByRole('button', { name: 'Remove scan.png' }).waitFor();
      assert.equal(await page.locator('li.file').count(), 1, 'the refused file was not kept');
      await assertVisibleText(page, 'Up to 3 MB per file and 5 MB in total.');
      await shoot(page, 'reply-restored', [360]);

      // Signing out from the message itself; the link then asks for a code again.
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      await page.reload();
      await page.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
    } finally {
      await context.close();
    }
  });
});

async function assertVisibleText(page: Page, text: string | RegExp): Promise<void> {
  await page.getByText(text).first().waitFor({ state: 'visible', timeout: 5000 });
}
