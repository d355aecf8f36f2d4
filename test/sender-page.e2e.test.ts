import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from './support/reader-stack.ts';
import { signInAsSender } from './support/sender-browser.ts';
import { startSenderFake, type SenderFake } from './support/sender-fake.ts';

/**
 * The sender's page (/sent) in Chromium: sign-in with a code, the list and its search, a recipient's timeline,
 * withdrawal after a confirmation, the end date, the trail's download, sign-out. The page is served by the auth
 * service's own route from a fresh build; the /v1/sender/* API behind it is the stand-in of
 * test/support/sender-fake.ts, in the spec's shapes, until the real routes are merged.
 */

const DANA = 'dana@sender.example';
const ERIN = 'erin@sender.example';
const ALICE = 'alice@example.com';
const CAROL = 'carol@example.com';
const DAY = 86_400_000;
const ZONE = 'Europe/Zurich';

describe("the sender's page (/sent) in Chromium, against a stand-in of the sender API", () => {
  let fake: SenderFake;
  let browser: Browser;
  before(async () => {
    fake = await startSenderFake({ maxAttempts: 3, codeIntervalSeconds: 3, maxExpiryMs: 30 * DAY });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  after(async () => {
    await browser?.close();
    await fake?.close();
  });

  const newPage = async (): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser.newContext({
      locale: 'en-US',
      timezoneId: ZONE,
      acceptDownloads: true,
      viewport: { width: 1280, height: 900 },
    });
    return { context, page: await context.newPage() };
  };
  const when = (iso: string, lang = 'en') =>
    new Intl.DateTimeFormat(lang, { dateStyle: 'long', timeStyle: 'short', timeZone: ZONE }).format(new Date(iso));
  const text = (page: Page, selector = 'main') =>
    // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what the sender sees
    page.locator(selector).innerText();

  it('signs in with a code by email: tries left after a wrong one, the wait for a new one counted down', async () => {
    const { context, page } = await newPage();
    try {
      await page.goto(`${fake.url}/sent`);
      await page.getByRole('heading', { name: 'Your sealed messages' }).waitFor();
      assert.equal(await page.locator('main').getAttribute('data-screen'), 'sender-sign-in');
      await page.getByLabel('Your email address').fill('not an address');
      await page.getByRole('button', { name: 'Send me a code' }).click();
      await page.getByRole('alert').getByText('Please enter a complete email address').waitFor();
      assert.equal(fake.calls.filter((c) => c.path === '/v1/sender/code').length, 0, 'nothing asked for');

      await page.getByLabel('Your email address').fill(DANA);
      await page.getByRole('button', { name: 'Send me a code' }).click();
      await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
      assert.match(
        await text(page),
        /If dana@sender\.example may sign in here, we sent a 6-digit code to it by email\./,
      );
      const code = fake.codes.get(DANA)!;

      const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
      await page.getByLabel('Code', { exact: true }).fill(wrong);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').getByText('You have 2 tries left.').waitFor();
      assert.equal(await page.getByLabel('Code', { exact: true }).getAttribute('aria-invalid'), 'true');

      // A new code at once: the service says to wait (429, Retry-After), and the button counts it down.
      await page.getByRole('button', { name: 'Send a new code' }).click();
      await page.getByRole('alert').getByText('Too many codes were asked for').waitFor();
      assert.ok(await page.getByRole('button', { name: 'Send a new code' }).isDisabled());
      assert.match(await text(page, '.resend .wait'), /You can ask for a new code in [1-3] seconds?\./);
      await page.locator('.resend button:not([disabled])').waitFor({ timeout: 6_000 });

      await page.getByLabel('Code', { exact: true }).fill(code);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('main[data-screen="sender-list"]').waitFor();
      assert.match(await text(page), /Signed in as dana@sender\.example\./);
      assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1', 'the focus on the heading');

      // A reload keeps the session: the list again, no sign-in.
      await page.reload();
      await page.locator('main[data-screen="sender-list"]').waitFor();
    } finally {
      await context.close();
    }
  });

  it('lists its sender’s messages, newest first, in pages, searched by recipient and subject', async () => {
    const base = Date.parse('2026-03-01T09:00:00Z');
    for (let i = 0; i < 23; i++)
      fake.seal({
        sender: ERIN,
        subject: `Invoice ${String(i).padStart(2, '0')}`,
        sealedAt: new Date(base + i * DAY).toISOString(),
        recipients: [i % 5 === 0 ? 'bob@example.com' : ALICE],
      });
    fake.seal({ sender: DANA, subject: 'Not Erin’s', sealedAt: new Date(base).toISOString(), recipients: [ALICE] });
    const { context, page } = await newPage();
    try {
      await signInAsSender(page, fake, ERIN);
      const subjects = () => page.locator('.sent-subject').allInnerTexts();
      const first = await subjects();
      assert.deepEqual(
        first,
        Array.from({ length: 20 }, (_, i) => `Invoice ${String(22 - i).padStart(2, '0')}`),
        'newest first, 20 a page',
      );
      assert.match(await text(page, '.sent-list li:first-child'), new RegExp(`Sealed ${when('2026-03-23T09:00:00Z')}`));
      await page.getByRole('button', { name: 'Show older messages' }).click();
      await page.locator('.sent-item').nth(22).waitFor();
      assert.deepEqual((await subjects()).slice(20), ['Invoice 02', 'Invoice 01', 'Invoice 00']);
      assert.ok(
        await page.locator('.sent-list li:nth-child(21) button').evaluate((b) => b === document.activeElement),
        'the focus on the first older message',
      );
      assert.ok(await page.getByRole('button', { name: 'Show older messages' }).isHidden(), 'no more');
      assert.ok(!(await subjects()).includes('Not Erin’s'));
      const older = fake.calls.find((c) => c.path.includes('before='));
      assert.ok(older?.path.includes(`before=${encodeURIComponent(new Date(base + 3 * DAY).toISOString())}`));

      await page.getByLabel('Search by recipient or subject').fill('BOB@');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByRole('status').getByText('5 messages shown.').waitFor();
      assert.deepEqual(await subjects(), ['Invoice 20', 'Invoice 15', 'Invoice 10', 'Invoice 05', 'Invoice 00']);

      await page.getByLabel('Search by recipient or subject').fill('invoice 1');
      await page.keyboard.press('Enter');
      await page.getByRole('status').getByText('10 messages shown.').waitFor();
      await page.getByLabel('Search by recipient or subject').fill('nothing like it');
      await page.keyboard.press('Enter');
      await page.getByText('No message matches “nothing like it”.').waitFor();
      await page.getByRole('button', { name: 'Show all' }).click();
      await page.getByRole('status').getByText('20 messages shown.').waitFor();
    } finally {
      await context.close();
    }
  });

  /** Dana's message to Alice (notified, opened twice, one wrong code, a download, a reply) and Carol (notified). */
  const sealForDana = (subject: string) => {
    const sealedAt = new Date(Date.now() - 2 * DAY).toISOString();
    const id = fake.seal({
      sender: DANA,
      subject,
      sealedAt,
      expiresAt: new Date(Date.now() + 5 * DAY).toISOString(),
      recipients: [ALICE, CAROL],
    });
    const at = (hours: number) => new Date(Date.parse(sealedAt) + hours * 3_600_000).toISOString();
    fake.event(id, { at: at(0), event: 'notified', recipient: ALICE });
    fake.event(id, { at: at(0), event: 'notified', recipient: CAROL });
    fake.event(id, { at: at(1), event: 'sign_in_failed', recipient: ALICE, client: '203.0.113.x' });
    fake.event(id, { at: at(2), event: 'opened', recipient: ALICE, client: '203.0.113.x' });
    fake.event(id, {
      at: at(3),
      event: 'attachment_downloaded',
      recipient: ALICE,
      detail: { attachment: 'contract.pdf' },
    });
    fake.event(id, { at: at(4), event: 'reply_sent', recipient: ALICE });
    fake.event(id, { at: at(26), event: 'opened', recipient: ALICE, client: '203.0.113.x' });
    return { id, sealedAt, at };
  };

  const openMessage = async (page: Page, subject: string) => {
    await page.getByRole('button', { name: new RegExp(subject) }).click();
    await page.getByRole('heading', { name: subject, level: 1 }).waitFor();
  };

  /** A recipient's timeline as label → value. */
  const timeline = async (page: Page, email: string) => {
    const item = page.locator('.recipient', { has: page.getByRole('heading', { name: email }) });
    const labels = await item.locator('dt').allInnerTexts();
    const values = await item.locator('dd').allInnerTexts();
    return Object.fromEntries(labels.map((label, i) => [label, values[i]]));
  };

  it("shows each recipient's timeline, the dates in the page's language", async () => {
    const { at } = sealForDana('Timeline of a contract');
    const { context, page } = await newPage();
    try {
      await signInAsSender(page, fake, DANA);
      await openMessage(page, 'Timeline of a contract');
      assert.equal(await page.locator('main').getAttribute('data-screen'), 'sender-message');
      assert.deepEqual(await timeline(page, ALICE), {
        Notified: when(at(0)),
        'First opened': when(at(2)),
        'Last opened': when(at(26)),
        'Failed sign-ins': '1',
        'Attachments downloaded': '1',
        'Replies sent': '1',
      });
      assert.deepEqual(await timeline(page, CAROL), {
        Notified: when(at(0)),
        'First opened': 'Never',
        'Last opened': 'Never',
        'Failed sign-ins': '0',
        'Attachments downloaded': '0',
        'Replies sent': '0',
      });
      await page.locator('#language').selectOption('de');
      await page.getByRole('heading', { name: 'Empfänger', exact: true }).waitFor();
      const german = await timeline(page, ALICE);
      assert.equal(german['Zuerst geöffnet'], when(at(2), 'de'));
      assert.equal(german['Gesendete Antworten'], '1');
      await page.getByRole('button', { name: /Zurück zur Liste/ }).click();
      await page.getByRole('heading', { name: 'Ihre versiegelten Nachrichten' }).waitFor();
    } finally {
      await context.close();
    }
  });

  it('shows how each recipient signs in and where their number came from, in the page’s language', async () => {
    const BOB = 'bob@example.com';
    const ERIK = 'erik@example.com';
    fake.seal({
      sender: DANA,
      subject: 'Numbers from three places',
      sealedAt: new Date(Date.now() - DAY).toISOString(),
      recipients: [ALICE, BOB, CAROL, ERIK],
      signIn: {
        [ALICE]: { method: 'sms', mobileSource: 'header' },
        [BOB]: { method: 'sms', mobileSource: 'directory' },
        [CAROL]: { method: 'sms', mobileSource: 'confirmed' },
        [ERIK]: { method: 'email' },
      },
    });
    const { context, page } = await newPage();
    try {
      await signInAsSender(page, fake, DANA);
      await openMessage(page, 'Numbers from three places');
      assert.equal((await timeline(page, ALICE))['Signs in'], 'By SMS, to the number the message gave');
      assert.equal((await timeline(page, BOB))['Signs in'], 'By SMS, to the number in the contacts directory');
      assert.equal((await timeline(page, CAROL))['Signs in'], 'By SMS, to the number the recipient confirmed');
      assert.equal((await timeline(page, ERIK))['Signs in'], 'With a code by email (no mobile number)');
      await page.locator('#language').selectOption('fr');
      await page.getByRole('heading', { name: 'Destinataires', exact: true }).waitFor();
      assert.equal((await timeline(page, BOB)).Connexion, 'Par SMS, au numéro de l’annuaire des contacts');
    } finally {
      await context.close();
    }
  });

  it('withdraws for one recipient after a confirmation that names them, its button where none was', async () => {
    const { id } = sealForDana('Withdraw me');
    const { context, page } = await newPage();
    try {
      await signInAsSender(page, fake, DANA);
      await openMessage(page, 'Withdraw me');
      const trigger = page.getByRole('button', { name: `Withdraw for ${CAROL}`, exact: true });
      // At 360 px, where the buttons are stacked, it is not where the asking button was; at 1280, where no button was.
      await page.setViewportSize({ width: 360, height: 780 });
      await trigger.click();
      const narrow = (await page.getByRole('button', { name: `Yes, withdraw for ${CAROL}` }).boundingBox())!;
      const asked = (await trigger.boundingBox())!;
      assert.ok(narrow.y >= asked.y + asked.height, 'below the asking button');
      await page.getByRole('button', { name: 'Cancel' }).click();
      await page.setViewportSize({ width: 1280, height: 900 });
      const before = await page
        .locator('main button')
        .evaluateAll((buttons) => buttons.map((b) => JSON.stringify(b.getBoundingClientRect())));
      assert.equal(await trigger.getAttribute('aria-expanded'), 'false');
      await trigger.click();
      assert.equal(await trigger.getAttribute('aria-expanded'), 'true');
      const confirm = page.getByRole('button', { name: `Yes, withdraw for ${CAROL}` });
      await confirm.waitFor();
      assert.match(await text(page, '.confirm:not([hidden])'), /Withdraw this message for carol@example\.com\?/);
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('type')), 'text', 'focus: reason');
      const box = (await confirm.boundingBox())!;
      for (const json of before) {
        const other = JSON.parse(json) as { x: number; y: number; width: number; height: number };
        const overlaps =
          box.x < other.x + other.width &&
          other.x < box.x + box.width &&
          box.y < other.y + other.height &&
          other.y < box.y + box.height;
        assert.ok(!overlaps, `the confirming button ${JSON.stringify(box)} is where a button was: ${json}`);
      }

      // No reason: nothing is sent.
      await confirm.click();
      await page.getByRole('alert').getByText('Please give a reason.').waitFor();
      assert.equal(fake.calls.filter((c) => c.path.endsWith('/withdraw')).length, 0);

      await page.getByRole('textbox', { name: 'Reason' }).fill('Sent to the wrong Carol');
      await confirm.click();
      await page.getByRole('status').getByText(`The message was withdrawn for ${CAROL}.`).waitFor();
      const call = fake.calls.find((c) => c.path === `/v1/sender/sealed/${id}/withdraw`);
      assert.deepEqual(call?.body, { reason: 'Sent to the wrong Carol', recipient: CAROL });
      const carol = await timeline(page, CAROL);
      assert.equal(carol.Withdrawn, when(fake.entry(id).recipients[1]!.withdrawnAt!));
      assert.equal(await page.getByRole('button', { name: `Withdraw for ${CAROL}`, exact: true }).count(), 0);
      assert.equal(
        await page.getByRole('button', { name: `Withdraw for ${ALICE}`, exact: true }).count(),
        1,
        'Alice reads on',
      );
      assert.equal(fake.entry(id).end, undefined);

      // For everyone: Escape takes the question back, and the focus to the button that asked it.
      const everyone = page.getByRole('button', { name: 'Withdraw for everyone', exact: true });
      await everyone.click();
      await page.keyboard.press('Escape');
      assert.equal(await everyone.getAttribute('aria-expanded'), 'false');
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Withdraw for everyone');
      await everyone.press('Enter');
      await page.keyboard.type('The contract is void');
      await page.getByRole('button', { name: 'Yes, withdraw', exact: true }).click();
      await page.getByRole('status').getByText('The message was withdrawn for everyone.').waitFor();
      assert.match(await text(page, '.end-date'), /^Withdrawn for everyone on /);
      assert.equal(fake.entry(id).end?.reason, 'withdrawn');
      assert.equal(await page.locator('main button', { hasText: 'Withdraw' }).count(), 0, 'nothing left to withdraw');
      assert.equal(await page.getByLabel('New end date and time').count(), 0, 'no end date to change');
    } finally {
      await context.close();
    }
  });

  it("moves the end date, and shows the service's refusal beyond SEAL_MAX_EXPIRY", async () => {
    const { id, sealedAt } = sealForDana('Move my end');
    const { context, page } = await newPage();
    try {
      await signInAsSender(page, fake, DANA);
      await openMessage(page, 'Move my end');
      assert.equal(await text(page, '.end-date'), when(fake.entry(id).expiresAt!));
      const input = page.getByLabel('New end date and time');
      const local = (iso: string) =>
        new Intl.DateTimeFormat('sv-SE', {
          timeZone: ZONE,
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
        })
          .format(new Date(iso))
          .replace(' ', 'T');
      assert.equal(await input.inputValue(), local(fake.entry(id).expiresAt!), 'the present end date, local');

      const tooLate = new Date(Date.parse(sealedAt) + 31 * DAY).toISOString();
      await input.fill(local(tooLate));
      await page.getByRole('button', { name: 'Save the end date' }).click();
      const alert = page.locator('.end-date-form [role="alert"]');
      await alert.getByText('The end date was not accepted.', { exact: false }).waitFor();
      assert.match(
        await text(page, '.end-date-form [role="alert"]'),
        /The service said: expiresAt must be within SEAL_MAX_EXPIRY \(720h\)/,
      );
      assert.equal(await input.getAttribute('aria-invalid'), 'true');

      const later = new Date(Math.floor((Date.parse(sealedAt) + 20 * DAY) / 60_000) * 60_000).toISOString();
      await input.fill(local(later));
      await page.getByRole('button', { name: 'Save the end date' }).click();
      await page
        .getByRole('status')
        .getByText(`The message now ends on ${when(later)}.`)
        .waitFor();
      assert.equal(fake.entry(id).expiresAt, later);
      assert.deepEqual(fake.calls.filter((c) => c.path.endsWith('/expiry')).at(-1)?.body, { expiresAt: later });
      assert.equal(await text(page, '.end-date'), when(later));
    } finally {
      await context.close();
    }
  });

  it('downloads the trail as CSV and as JSON, and signs out', async () => {
    const { id } = sealForDana('Trail to download');
    const { context, page } = await newPage();
    try {
      await signInAsSender(page, fake, DANA);
      await openMessage(page, 'Trail to download');
      const csvLink = page.getByRole('link', { name: 'Download the trail as CSV' });
      assert.equal(await csvLink.getAttribute('href'), `/v1/sender/sealed/${id}/trail?format=csv`);
      const [csv] = await Promise.all([page.waitForEvent('download'), csvLink.click()]);
      const lines = (await readFile((await csv.path())!, 'utf8')).trim().split('\n');
      assert.equal(lines[0], 'at,event,recipient,client,detail');
      assert.deepEqual(
        lines.slice(1).map((line) => line.split(',')[1]),
        ['sealed', 'notified', 'notified', 'sign_in_failed', 'opened', 'attachment_downloaded', 'reply_sent', 'opened'],
      );
      const jsonLink = page.getByRole('link', { name: 'Download the trail as JSON' });
      assert.equal(await jsonLink.getAttribute('href'), `/v1/sender/sealed/${id}/trail`);
      const [json] = await Promise.all([page.waitForEvent('download'), jsonLink.click()]);
      assert.equal(json.suggestedFilename(), `trail-${id}.json`);
      const trail = JSON.parse(await readFile((await json.path())!, 'utf8')) as { id: string; trail: unknown[] };
      assert.equal(trail.id, id);
      assert.equal(trail.trail.length, 8);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      assert.ok(fake.calls.some((c) => c.method === 'GET' && c.path === '/logout'));
      await page.reload();
      await page.locator('main[data-screen="sender-sign-in"]').waitFor();
      const direct = await page.evaluate(`fetch('/v1/sender/sealed/${id}').then((r) => r.status)`);
      assert.equal(direct, 401, 'the session holds no sender any more');
    } finally {
      await context.close();
    }
  });
});
