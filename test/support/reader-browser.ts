import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import type { Page, Request } from 'playwright-core';
import type { SmsCapture } from './sms-capture.ts';
import type { SmtpSink } from './smtp-sink.ts';

/**
 * What the browser tests of the reader page do as a recipient would: seal a message by mail, take the
 * reader link from the notification, ask for a code on the page and enter the one the SMS brought.
 */

export const SENDER = 'Dana Sender <dana@sender.example>';

/** A recipient given no mobile number signs in with a code by email. */
export interface Recipient {
  email: string;
  mobile?: string;
}

/** What a sealed test mail says, beside its sender and its recipients (nodemailer's fields). */
export type MailContent = Pick<SendMailOptions, 'subject' | 'text' | 'html' | 'attachments'>;

/** Sends `content` from SENDER to `recipients` through Sealpost's SMTP port, with their mobile numbers. */
export async function sendSealedMail(smtpPort: number, recipients: Recipient[], content: MailContent): Promise<void> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: smtpPort,
    secure: false,
    ignoreTLS: true,
    connectionTimeout: 10_000,
  });
  try {
    await transport.sendMail({
      from: SENDER,
      to: recipients.map((r) => r.email),
      ...content,
      headers: recipients.flatMap((r) =>
        r.mobile ? [{ key: 'X-Sealpost-Mobile', value: `${r.email}=${r.mobile}` }] : [],
      ),
    });
  } finally {
    transport.close();
  }
}

/** Seals a message for `to` by mail and returns the reader link of the notification it brings. */
export async function sealFor(smtpPort: number, sink: SmtpSink, to: Recipient, content: MailContent): Promise<string> {
  const before = sink.messages.length;
  await sendSealedMail(smtpPort, [to], content);
  return readerLink(sink, to.email, before);
}

/** The reader link of the first notification to `to` beyond the `before` first messages at the sink. */
export async function readerLink(sink: SmtpSink, to: string, before: number): Promise<string> {
  const about = (m: SmtpSink['messages'][number]) => m.to.includes(to) && /\/m\/[A-Za-z0-9_-]+/.test(m.raw.toString());
  await sink.waitUntil(() => sink.messages.slice(before).some(about), 30_000, `the notification to ${to}`);
  const parsed = await simpleParser(sink.messages.slice(before).find(about)!.raw);
  const link = /https?:\/\/[^\s"<>]+\/m\/[A-Za-z0-9_-]+/.exec(parsed.text ?? '')?.[0];
  assert.ok(link, `no reader link in the notification:\n${parsed.text}`);
  return link;
}

/** Waits until the SMS capture has a code for `to` beyond the `before` first messages. */
export async function nextCode(sms: SmsCapture, to: string, before: number): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (sms.messages.slice(before).every((m) => m.to !== to)) {
    if (Date.now() > deadline) throw new Error(`no SMS to ${to}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return sms.lastCodeTo(to);
}

export const sentTo = (sms: SmsCapture, to: string) => sms.messages.filter((m) => m.to === to).length;
export const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

/**
 * Follows the page's requests from now on. `settled()` resolves once none is in flight: what the page
 * sent has had its effect (an SMS sent, a draft saved), so a test checks it without waiting a fixed time.
 */
export function watchRequests(page: Page): { settled(): Promise<void> } {
  const inFlight = new Set<Request>();
  const done = (request: Request) => inFlight.delete(request);
  page.on('request', (request) => inFlight.add(request));
  page.on('requestfinished', done);
  page.on('requestfailed', done);
  return {
    async settled() {
      const deadline = Date.now() + 10_000;
      while (inFlight.size > 0) {
        if (Date.now() > deadline)
          throw new Error(`requests still in flight: ${[...inFlight].map((request) => request.url()).join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

export async function requestCode(page: Page, link: string, who: { email: string; mobile: string }): Promise<void> {
  await page.goto(link);
  await page.getByLabel('Email address').fill(who.email);
  await page.getByLabel(/Mobile number/).fill(who.mobile);
  await page.getByRole('button', { name: 'Send me a code' }).click();
  await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
}

export async function enterCode(page: Page, code: string): Promise<void> {
  await page.getByLabel('Code', { exact: true }).fill(code);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * Presses the mobile change's first button; when the code of the sign-in went less than the wait between two codes
 * ago, the form says the wait, and the button is pressed again once it is over.
 */
export async function startMobileChange(page: Page, start: string, code: string): Promise<void> {
  const button = page.getByRole('button', { name: start });
  await button.click();
  const wait = page.locator('.mobile-change .wait').filter({ hasText: /A code was sent a moment ago/ });
  const field = page.getByLabel(code, { exact: true });
  await field.or(wait).waitFor();
  if (await field.isVisible()) return;
  // Polled from here: the page's CSP refuses a string to evaluate, and this module has no DOM types for a function.
  const first = page.locator('.mobile-change form button').first();
  for (let tries = 0; tries < 80 && (await first.isDisabled()); tries++) await page.waitForTimeout(250);
  await button.click();
  await field.waitFor();
}

/**
 * Opens the mobile section (folded until opened) until its first field shows: the message screen is drawn again
 * once its parts have loaded, which may fold a section opened a moment before.
 */
export async function openSection(page: Page, title: string, field: string): Promise<void> {
  const input = page.getByLabel(field, { exact: true });
  for (let tries = 0; tries < 40 && !(await input.isVisible()); tries++) {
    if ((await page.locator('details.mobile').getAttribute('open')) === null) await page.getByText(title).click();
    await page.waitForTimeout(250);
  }
  await input.waitFor();
}
