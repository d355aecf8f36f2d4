import type { Page } from 'playwright-core';
import type { SenderFake } from './sender-fake.ts';

/** What the browser tests of the sender's page do as a sender would: open /sent, ask for a code, enter it. */
export async function signInAsSender(page: Page, fake: SenderFake, email: string): Promise<void> {
  await page.goto(`${fake.url}/sent`);
  await page.getByLabel('Your email address').fill(email);
  await page.getByRole('button', { name: 'Send me a code' }).click();
  await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
  await page.getByLabel('Code', { exact: true }).fill(fake.codes.get(email)!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Your sealed messages' }).waitFor();
  await page.locator('main[data-screen="sender-list"]').waitFor();
}
