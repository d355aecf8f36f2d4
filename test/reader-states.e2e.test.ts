import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';
import {
  enterCode,
  nextCode,
  requestCode,
  sealFor,
  sentTo,
  watchRequests,
  wrongCode,
} from './support/reader-browser.ts';

/**
 * The reader page says what happened, in Chromium against `sealpost start all`: a code voided by wrong
 * tries (tries left, then "can no longer be used", the resend button its one action), a reload on the code
 * screen (the code screen again, no second SMS), content whose stored block was altered (the broken
 * seal in red with its CID, never "try again"), and the pages a browser gets for addresses that are no
 * reader link. Screenshots go to test-output/screenshots like those of reader.e2e.test.ts.
 */

const SCREENSHOTS = fileURLToPath(new URL('../test-output/screenshots/', import.meta.url));

const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
const CAROL = { email: 'carol@example.com', mobile: '+41791234568' };
const DAVE = { email: 'dave@example.com', mobile: '+41791234569' };
const SUBJECT = 'Your lease, sealed';
const TAMPERED_SUBJECT = 'Your deed, sealed';

async function shoot(page: Page, name: string): Promise<void> {
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
    await page.waitForTimeout(50);
    if (width === 360)
      assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 360, `${name}: wider than 360 px`);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** The block files of the IPFS Cluster stand-in (blockstore-fs: one `.data` file per block). */
async function blockFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.data'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('the reader page says what happened (Chromium)', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  let dataDir: string;
  let link: string;

  const stack = useReaderStack('reader-states', { DELIVERY_RETRY_BASE: '1s' });
  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    ({ sms, sink, sealpost, browser, dataDir } = stack);
    link = await sealFor(sealpost.ports.smtp, sink, ALICE, { subject: SUBJECT, text: 'Please sign the lease.' });
  });

  it('counts down the tries of a wrong code, then says it is void and offers a new one that signs in', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const before = sms.messages.length;
      await requestCode(page, link, ALICE);
      const code = await nextCode(sms, ALICE.mobile, before);
      for (const left of [4, 3, 2, 1]) {
        await enterCode(page, wrongCode(code));
        const alert = page
          .getByRole('alert')
          .filter({ hasText: left === 1 ? 'You have 1 try left.' : `You have ${left} tries left.` });
        await alert.waitFor();
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
        assert.match(await alert.innerText(), /That code is not right/);
      }
      await shoot(page, 'code-tries-left');
      // The fifth wrong try voids the code; the right code cannot be tried any more.
      await enterCode(page, wrongCode(code));
      await page.getByRole('alert').filter({ hasText: 'This code can no longer be used' }).waitFor();
      assert.equal(await page.getByLabel('Code', { exact: true }).isDisabled(), true);
      assert.equal(await page.getByRole('button', { name: 'Sign in' }).isDisabled(), true);
      // One action, the resend button in its place (no second button in the alert), with the focus on it.
      const newCode = page.getByRole('button', { name: 'Send a new code' });
      assert.equal(await page.getByRole('button', { name: 'Send me a new code' }).count(), 0);
      assert.equal(
        await page.evaluate(() => document.activeElement?.textContent),
        'Send a new code',
        'the focus is on the way on',
      );
      await shoot(page, 'code-void');

      const sent = sentTo(sms, ALICE.mobile);
      await newCode.click();
      await page.getByText('A new code is on its way.').waitFor();
      const next = await nextCode(sms, ALICE.mobile, sms.messages.length - 1);
      assert.equal(sentTo(sms, ALICE.mobile), sent + 1, 'one new SMS');
      assert.equal(await page.getByLabel('Code', { exact: true }).isDisabled(), false);
      await enterCode(page, next);
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
    } finally {
      await context.close();
    }
  });

  it('shows the code screen again after a reload, sends no other SMS, and signs in with the first code', async () => {
    const daveLink = await sealFor(sealpost.ports.smtp, sink, DAVE, {
      subject: SUBJECT,
      text: 'Please sign the lease.',
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const before = sms.messages.length;
      await requestCode(page, daveLink, DAVE);
      const code = await nextCode(sms, DAVE.mobile, before);
      const sent = sentTo(sms, DAVE.mobile);

      const requests = watchRequests(page);
      await page.reload();
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      await page.getByText(/We sent you a code by SMS to \+41\*+69 at .+\./).waitFor();
      // How long it stays valid is said under the code's label, where it stays put when the code is gone.
      await page.getByText(/It is valid for \d+ minutes? more\./).waitFor();
      await page.getByRole('button', { name: 'Send a new code' }).waitFor();
      await shoot(page, 'code-after-reload');
      await requests.settled();
      assert.equal(sentTo(sms, DAVE.mobile), sent, 'the reload sent no SMS');

      await enterCode(page, code);
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
    } finally {
      await context.close();
    }
  });

  it('sends a new code after a reload to the same number, with nothing typed again', async () => {
    const carolLink = await sealFor(sealpost.ports.smtp, sink, CAROL, {
      subject: SUBJECT,
      text: 'Please sign the lease.',
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const before = sms.messages.length;
      await requestCode(page, carolLink, CAROL);
      await nextCode(sms, CAROL.mobile, before);
      await page.reload();
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      const sent = sms.messages.length;
      await page.getByRole('button', { name: 'Send a new code' }).click();
      await page.getByText('A new code is on its way.').waitFor();
      const next = await nextCode(sms, CAROL.mobile, sent);
      await enterCode(page, next);
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
    } finally {
      await context.close();
    }
  });

  it('shows a broken seal in red with its CID, never "try again", when a stored byte was flipped', async () => {
    const blocks = join(dataDir, 'ipfs-cluster', 'blocks');
    const known = new Set(await blockFiles(blocks));
    const tamperedLink = await sealFor(sealpost.ports.smtp, sink, ALICE, {
      subject: TAMPERED_SUBJECT,
      text: `The deed, in words that must not change. ${'x'.repeat(400)}`,
    });
    const added = (await blockFiles(blocks)).filter((file) => !known.has(file));
    assert.ok(added.length >= 1, 'the sealed message added blocks');
    // The ciphertext is the largest new block (a wrapping directory, if any, is a small node).
    const sizes = await Promise.all(added.map(async (file) => ({ file, size: (await stat(file)).size })));
    const target = sizes.sort((a, b) => b.size - a.size)[0]!.file;
    const block = await readFile(target);
    const middle = Math.floor(block.length / 2);
    block.writeUInt8(block.readUInt8(middle) ^ 0x01, middle);
    await writeFile(target, block);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const before = sms.messages.length;
      await requestCode(page, tamperedLink, ALICE);
      await enterCode(page, await nextCode(sms, ALICE.mobile, before));
      await page.getByRole('heading', { name: 'The seal is broken' }).waitFor();
      assert.equal(await page.locator('main').getAttribute('data-screen'), 'seal-broken');
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
      const alert = await page.getByRole('alert').innerText();
      assert.match(alert, /its content no longer matches what was sealed/);
      assert.match(alert, /Sealed content: IPFS CID (Qm|bafy)[A-Za-z0-9]+/);
      assert.match(alert, /The copy on \S.*: damaged/, 'each copy tried is named with its state');
      const color = await page
        .getByRole('heading', { name: 'The seal is broken' })
        .evaluate((element) => getComputedStyle(element).color);
      assert.equal(color, 'rgb(179, 38, 30)', 'the heading is red (--danger)');
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
      const text = await page.locator('main').innerText();
      assert.doesNotMatch(text, /try again|cannot be fetched right now/i);
      assert.doesNotMatch(text, /words that must not change/, 'nothing of the content');
      assert.equal(await page.getByRole('button', { name: 'Try again' }).count(), 0);
      await shoot(page, 'seal-broken');
    } finally {
      await context.close();
    }
  });

  it('answers a page with a sentence for addresses that are no reader link, and shows an icon', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const origin = new URL(link).origin;
      for (const [path, status, heading] of [
        ['/', 404, 'There is no message at this address'],
        ['/m/a/b', 404, 'There is no message at this address'],
        [`/m/${'a'.repeat(129)}`, 404, 'There is no message at this address'],
        [`/m/${'a'.repeat(600)}`, 414, 'This link is too long'],
      ] as const) {
        const response = await page.goto(`${origin}${path}`);
        assert.equal(response?.status(), status, path);
        await page.getByRole('heading', { name: heading }).waitFor();
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
        const text = await page.locator('body').innerText();
        assert.match(text, /Please open the link from your email again/);
        assert.doesNotMatch(text, /[{}]|"kind"|errorCode/, `${path}: no raw JSON`);
      }
      await shoot(page, 'link-too-long');

      await page.goto(link);
      await page.getByRole('heading', { name: 'Read your sealed message' }).waitFor();
      const icon = await page.locator('link[rel="icon"]').getAttribute('href');
      assert.equal(icon, '/favicon.svg');
      const answer = await page.request.get(`${origin}${icon}`);
      assert.equal(answer.status(), 200);
      assert.equal(answer.headers()['content-type'], 'image/svg+xml');
      assert.match(await answer.text(), /^<svg /);
    } finally {
      await context.close();
    }
  });
});
