import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { assertNone, checkScreen } from './support/reader-axe.ts';
import type { SealpostProcess } from './support/sealpost-process.ts';
import { useReaderStack } from './support/reader-stack.ts';
import type { SmsCapture } from './support/sms-capture.ts';
import type { SmtpSink } from './support/smtp-sink.ts';
import {
  enterCode,
  nextCode,
  openSection,
  requestCode,
  sealFor,
  sentTo,
  startMobileChange,
  wrongCode,
} from './support/reader-browser.ts';
import { TEXTS } from '../web/reader/texts/index.ts';

/**
 * The sign-in, code and mobile-change screens keep what they said across a language switch and a reload (an
 * error, a code gone, the resend wait, what was typed), and say it precisely: a replaced code as replaced, "too
 * many codes" only at the real limit and with its countdown, an expired code with one action, a missing message as
 * final, the mobile change's tries left and success. In Chromium against `sealpost start all`, with a 10 s wait
 * between two codes to a number, two codes per number and hour, and codes valid for 20 s.
 */

const en = TEXTS.en;
const de = TEXTS.de;
const SUBJECT = 'Your lease, sealed';
let person = 0;
/** A recipient of their own per test: the limits per number never meet another test's codes. */
const someone = () => {
  person += 1;
  return { email: `reader${person}@example.com`, mobile: `+4179555${String(1000 + person)}` };
};

async function switchTo(page: Page, lang: string): Promise<void> {
  await page.locator('#language').selectOption(lang);
  await page.waitForFunction(`document.documentElement.lang === ${JSON.stringify(lang)}`);
}

/** The number of seconds the wait line says now. */
async function secondsLeft(page: Page): Promise<number> {
  // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
  const text = await page.locator('main .wait').innerText();
  return Number(/(\d+)/.exec(text)?.[1]);
}

describe('the code screens keep and say their state precisely (Chromium)', () => {
  let sms: SmsCapture;
  let sink: SmtpSink;
  let sealpost: SealpostProcess;
  let browser: Browser;
  const found: string[] = [];

  const stack = useReaderStack('reader-code-states', {
    SMS_LIMIT_NUMBER_INTERVAL: '10s',
    SMS_LIMIT_NUMBER_HOURLY: '2',
    SMS_LIMIT_IP_HOURLY: '1000',
    SMS_CODE_EXPIRATION: '20s',
  });
  before(() => {
    ({ sms, sink, sealpost, browser } = stack);
  });

  async function fresh(): Promise<{ page: Page; close(): Promise<void> }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    return { page: await context.newPage(), close: () => context.close() };
  }
  const linkFor = (who: { email: string; mobile: string }) =>
    sealFor(sealpost.ports.smtp, sink, who, { subject: SUBJECT, text: 'Please sign the lease.' });

  it('keeps a sign-in error and what was typed across a language switch and a reload', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      await page.goto(link);
      await page.getByLabel('Email address').fill('nobody@example.com');
      await page.getByLabel(/Mobile number/).fill(who.mobile);
      const send = page.getByRole('button', { name: en.signIn.send });
      const at = await send.boundingBox();
      await send.click();
      await page.getByRole('alert').filter({ hasText: en.errors.unauthorized_user }).waitFor();
      assert.equal((await send.boundingBox())?.y, at?.y, 'the button stays where it was when the error appears');
      await switchTo(page, 'de');
      await page.getByRole('alert').filter({ hasText: de.errors.unauthorized_user }).waitFor();
      assert.equal(await page.getByLabel(de.signIn.email).inputValue(), 'nobody@example.com');
      await page.reload();
      await page.getByRole('alert').filter({ hasText: de.errors.unauthorized_user }).waitFor();
      assert.equal(await page.getByLabel(de.signIn.email).inputValue(), 'nobody@example.com');
      assert.equal(await page.getByLabel(/Mobilnummer/).inputValue(), who.mobile);
      await checkScreen(page, 'sign-in-error', found, (page, t) =>
        page.getByRole('alert').filter({ hasText: t.errors.unauthorized_user }).waitFor(),
      );
    } finally {
      await close();
    }
  });

  it('keeps a void code void, with its reason and the code field disabled, across a switch and a reload', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      const before = sms.messages.length;
      await requestCode(page, link, who);
      const code = await nextCode(sms, who.mobile, before);
      for (let i = 0; i < 5; i++) {
        await enterCode(page, wrongCode(code));
        await page.getByRole('alert').waitFor();
      }
      await page.getByRole('alert').filter({ hasText: en.errors.code_attempts_exceeded }).waitFor();
      await switchTo(page, 'de');
      await page.getByRole('alert').filter({ hasText: de.errors.code_attempts_exceeded }).waitFor();
      assert.equal(await page.getByLabel('Code', { exact: true }).isDisabled(), true, 'still disabled after a switch');
      await page.reload();
      await page.getByRole('alert').filter({ hasText: de.errors.code_attempts_exceeded }).waitFor();
      assert.equal(await page.getByLabel('Code', { exact: true }).isDisabled(), true, 'still disabled after a reload');
      assert.equal(await page.locator('main').getAttribute('data-screen'), 'code');
      await checkScreen(page, 'code-void', found, (page, t) =>
        page.getByRole('alert').filter({ hasText: t.errors.code_attempts_exceeded }).waitFor(),
      );
    } finally {
      await close();
    }
  });

  it('keeps the resend wait counting from when the code was sent, across a switch and a reload', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      await requestCode(page, link, who);
      const wait = page.locator('main .wait');
      await wait.waitFor();
      // Bounded by the 10 s interval: the line counts down to 7 and below.
      while ((await secondsLeft(page)) > 7) await page.waitForTimeout(200);
      await switchTo(page, 'de');
      await wait.filter({ hasText: /Sekunde/ }).waitFor();
      assert.ok((await secondsLeft(page)) <= 7, 'not started again at the switch');
      assert.equal(await page.getByRole('button', { name: de.code.resend }).isDisabled(), true);
      await page.reload();
      await wait.filter({ hasText: /Sekunde/ }).waitFor();
      assert.ok((await secondsLeft(page)) <= 7, 'not started again at the reload');
    } finally {
      await close();
    }
  });

  it('keeps a wrong code’s tries left and the typed code across a language switch', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      const before = sms.messages.length;
      await requestCode(page, link, who);
      const code = await nextCode(sms, who.mobile, before);
      const places = () =>
        page.locator('main button').evaluateAll((buttons) => buttons.map((b) => b.getBoundingClientRect().y));
      const at = await places();
      await enterCode(page, wrongCode(code));
      await page
        .getByRole('alert')
        .filter({ hasText: en.code.attemptsLeft(4) })
        .waitFor();
      assert.deepEqual(await places(), at, 'no button moved when the error appeared');
      await page.getByLabel('Code', { exact: true }).fill('12');
      await switchTo(page, 'fr');
      await page
        .getByRole('alert')
        .filter({ hasText: TEXTS.fr.code.attemptsLeft(4) })
        .waitFor();
      assert.equal(await page.getByLabel('Code', { exact: true }).inputValue(), '12', 'the typed code stays');
      await page.reload();
      await page
        .getByRole('alert')
        .filter({ hasText: TEXTS.fr.code.attemptsLeft(4) })
        .waitFor();
      assert.equal(await page.getByLabel('Code', { exact: true }).inputValue(), '', 'a code is never stored');
      await checkScreen(page, 'code-tries-left', found, (page, t) =>
        page
          .getByRole('alert')
          .filter({ hasText: t.code.attemptsLeft(4) })
          .waitFor(),
      );
    } finally {
      await close();
    }
  });

  it('says a replaced code was replaced, and the new code keeps all its tries', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      const before = sms.messages.length;
      await requestCode(page, link, who);
      const first = await nextCode(sms, who.mobile, before);
      const resend = page.getByRole('button', { name: en.code.resend });
      await page.waitForFunction(
        () => !(document.querySelector('.resend button') as HTMLButtonElement | null)?.disabled,
        undefined,
        { timeout: 20_000 },
      );
      const sent = sms.messages.length;
      await resend.click();
      await page.getByRole('status').filter({ hasText: en.code.resent }).waitFor();
      const second = await nextCode(sms, who.mobile, sent);
      await enterCode(page, first);
      const replaced = page.getByRole('alert').filter({ hasText: en.errors.code_replaced });
      await replaced.waitFor();
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the reader sees
      assert.match(await replaced.innerText(), /You have 5 tries left\./);
      await enterCode(page, wrongCode(second));
      await page
        .getByRole('alert')
        .filter({ hasText: en.code.attemptsLeft(4) })
        .waitFor();
      await enterCode(page, second);
      await page.getByRole('heading', { name: SUBJECT }).waitFor();
    } finally {
      await close();
    }
  });

  it('says "too many codes" only at the hourly limit, with its countdown; a wait before that as a wait', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      await requestCode(page, link, who);
      // At once again, from the sign-in form: within the 10 s between two codes, a wait, not "too many".
      await page.getByRole('button', { name: en.code.otherAddress }).click();
      await page.getByRole('button', { name: en.signIn.send }).click();
      const wait = page.locator('main .wait').filter({ hasText: /A code was sent a moment ago and still works/ });
      await wait.waitFor();
      assert.equal(await page.getByText(en.errors.sms_rate_limit).count(), 0, 'no "too many codes"');
      assert.equal(await page.getByRole('button', { name: en.signIn.send }).isDisabled(), true);
      // The wait over, the second code of the hour goes; the third meets the hourly limit.
      await page.getByRole('button', { name: en.signIn.send }).waitFor({ state: 'visible' });
      await page.waitForFunction(
        () => !(document.querySelector('main form button') as HTMLButtonElement | null)?.disabled,
        undefined,
        { timeout: 20_000 },
      );
      await page.getByRole('button', { name: en.signIn.send }).click();
      await page.getByRole('heading', { name: en.code.title }).waitFor();
      await page.waitForFunction(
        () => !(document.querySelector('.resend button') as HTMLButtonElement | null)?.disabled,
        undefined,
        { timeout: 20_000 },
      );
      await page.getByRole('button', { name: en.code.resend }).click();
      await page.getByRole('alert').filter({ hasText: en.errors.sms_rate_limit }).waitFor();
      await page
        .locator('main .wait')
        .filter({ hasText: /You can ask for a new code in \d+ minutes/ })
        .waitFor();
      assert.equal(await page.getByRole('button', { name: en.code.resend }).isDisabled(), true);
      assert.equal(sentTo(sms, who.mobile), 2);
      await checkScreen(page, 'code-too-many', found, (page, t) =>
        page.getByRole('alert').filter({ hasText: t.errors.sms_rate_limit }).waitFor(),
      );
      // Drawn again in each language, the resend button is still held back, its wait still counted down.
      assert.equal(await page.getByRole('button', { name: en.code.resend }).isDisabled(), true);
      await page
        .locator('main .wait')
        .filter({ hasText: /You can ask for a new code in \d+ minutes/ })
        .waitFor();
      await page.reload();
      await page.getByRole('alert').filter({ hasText: en.errors.sms_rate_limit }).waitFor();
      assert.equal(await page.getByRole('button', { name: en.code.resend }).isDisabled(), true, 'and after a reload');
    } finally {
      await close();
    }
  });

  it('says an expired code once, with one action, and keeps saying it after a reload', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      const before = sms.messages.length;
      await requestCode(page, link, who);
      const code = await nextCode(sms, who.mobile, before);
      const sentAt = Date.now();
      // Bounded: the code lives 20 s.
      while (Date.now() - sentAt < 21_000) await page.waitForTimeout(500);
      await enterCode(page, code);
      await page.getByRole('alert').filter({ hasText: en.errors.expired_code }).waitFor();
      assert.equal(await page.getByText(/valid for/).isVisible(), false, 'no "valid for" beside "expired"');
      assert.equal(await page.getByRole('button', { name: 'Send me a new code' }).count(), 0, 'no second button');
      const enabled = await page.locator('main button:enabled').allInnerTexts();
      assert.deepEqual(enabled, [en.code.otherAddress, en.code.resend], 'the way back, and one action');
      await page.reload();
      await page.getByRole('alert').filter({ hasText: en.errors.expired_code }).waitFor();
      assert.equal(await page.getByLabel('Code', { exact: true }).isDisabled(), true);
      await checkScreen(page, 'code-expired', found, (page, t) =>
        page.getByRole('alert').filter({ hasText: t.errors.expired_code }).waitFor(),
      );
    } finally {
      await close();
    }
  });

  it('shows a message that does not exist as final: no "Try again"', async () => {
    const who = someone();
    const link = await linkFor(who);
    const { page, close } = await fresh();
    try {
      await page.goto(`${new URL(link).origin}/m/${'Z'.repeat(22)}`);
      await page.getByRole('heading', { name: en.fatal.title }).waitFor();
      await page.getByText(en.errors.not_found).waitFor();
      assert.equal(await page.getByRole('button', { name: en.fatal.retry }).count(), 0);
      await checkScreen(page, 'not-found', found, (page, t) => page.getByText(t.errors.not_found).waitFor());
    } finally {
      await close();
    }
  });

  /** Signs `who` in and opens the mobile change with `number` typed. */
  async function atMobileChange(page: Page, who: { email: string; mobile: string }, number: string): Promise<void> {
    const before = sms.messages.length;
    await requestCode(page, await linkFor(who), who);
    await enterCode(page, await nextCode(sms, who.mobile, before));
    await page.getByRole('heading', { name: SUBJECT }).waitFor();
    await openSection(page, en.mobile.title, en.mobile.newNumber);
    await page.getByLabel(en.mobile.newNumber).fill(number);
  }

  it('shows the mobile change’s tries left across a switch and a reload, and "too many" with its wait', async () => {
    const who = someone();
    const { page, close } = await fresh();
    try {
      await atMobileChange(page, who, someone().mobile);
      const before = sms.messages.length;
      await startMobileChange(page, en.mobile.start, en.mobile.code);
      const current = await nextCode(sms, who.mobile, before);
      await page.getByLabel(en.mobile.code, { exact: true }).fill(wrongCode(current));
      await page.getByRole('button', { name: en.mobile.confirm }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: en.code.attemptsLeft(4) })
        .waitFor();
      await switchTo(page, 'it');
      await page
        .getByRole('alert')
        .filter({ hasText: TEXTS.it.code.attemptsLeft(4) })
        .waitFor();
      await page.reload();
      await page
        .getByRole('alert')
        .filter({ hasText: TEXTS.it.code.attemptsLeft(4) })
        .waitFor();
      await checkScreen(page, 'mobile-tries-left', found, (page, t) =>
        page
          .getByRole('alert')
          .filter({ hasText: t.code.attemptsLeft(4) })
          .waitFor(),
      );

      // Two codes went to the number this hour (sign-in, the change): a third is "too many", with its wait. Asked
      // from another tab of the same session (its own sessionStorage: the number form, not this tab's code step).
      const tab = await page.context().newPage();
      await tab.goto(page.url());
      await tab.getByRole('heading', { name: SUBJECT }).waitFor();
      await openSection(tab, en.mobile.title, en.mobile.newNumber);
      await tab.getByLabel(en.mobile.newNumber).fill(someone().mobile);
      await tab.getByRole('button', { name: en.mobile.start }).click();
      await tab.getByRole('alert').filter({ hasText: en.errors.sms_rate_limit }).waitFor();
      await tab
        .locator('.mobile-change .wait')
        .filter({ hasText: /in \d+ minutes/ })
        .waitFor();
      assert.equal(await tab.getByRole('button', { name: en.mobile.start }).isDisabled(), true);
      assert.equal(sentTo(sms, who.mobile), 2);
      await checkScreen(tab, 'mobile-too-many', found, (page, t) =>
        page.getByRole('alert').filter({ hasText: t.errors.sms_rate_limit }).waitFor(),
      );
    } finally {
      await close();
    }
  });

  it('says the changed number in a status box', async () => {
    const who = someone();
    const next = someone();
    const { page, close } = await fresh();
    try {
      await atMobileChange(page, who, next.mobile);
      let before = sms.messages.length;
      await startMobileChange(page, en.mobile.start, en.mobile.code);
      const current = await nextCode(sms, who.mobile, before);
      await page.getByLabel(en.mobile.code, { exact: true }).fill(current);
      before = sms.messages.length;
      await page.getByRole('button', { name: en.mobile.confirm }).click();
      const toNew = await nextCode(sms, next.mobile, before);
      // The form of the second step (its field empty) has replaced the first one's.
      await page.waitForFunction(
        () =>
          (document.querySelector('.mobile-change input[name="mobileCode"]') as HTMLInputElement | null)?.value === '',
      );
      await page.getByLabel(en.mobile.code, { exact: true }).fill(toNew);
      await page.getByRole('button', { name: en.mobile.confirm }).click();
      const done = page.getByRole('status').filter({ hasText: /Your mobile number is now/ });
      await done.waitFor();
      assert.equal(await done.evaluate((element) => element.classList.contains('notice')), true, 'a status box');
      await checkScreen(page, 'mobile-changed', found, (page) =>
        page.locator('.mobile-change .notice:not([hidden])').waitFor(),
      );
    } finally {
      await close();
    }
  });

  it('finds no axe violation on these states in four languages at 360 and 1280 px', () => {
    assertNone(found);
  });
});
