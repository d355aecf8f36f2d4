import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';
import type { Language } from '../../src/kernel/languages.ts';
import { TEXTS, type Texts } from '../../web/reader/texts/index.ts';

/**
 * The accessibility checks of the reader page's browser tests: axe-core (through @axe-core/playwright, all rules
 * but the experimental ones) on a screen in each of the four languages, switched with the page's own switcher,
 * at 360 and 1280 px. Screenshots go to test-output/screenshots (`a11y-<screen>-<lang>-<width>.png`). What runs in
 * the page is written as strings: test/support is type-checked without the DOM's types.
 */

export const SCREENSHOTS = fileURLToPath(new URL('../../test-output/screenshots/', import.meta.url));
export const LANGUAGES: Language[] = ['en', 'de', 'fr', 'it'];
export const WIDTHS = [360, 1280] as const;

/** axe's findings, one readable block per rule and place. */
export function describeViolations(
  where: string,
  violations: Awaited<ReturnType<AxeBuilder['analyze']>>['violations'],
): string[] {
  return violations.map((v) => {
    const nodes = v.nodes.map(
      (node) => `    ${node.target.join(' ')}\n      ${node.failureSummary?.replace(/\n/g, '\n      ')}`,
    );
    return `${where}: ${v.id} (${v.impact}) ${v.help}\n${nodes.join('\n')}`;
  });
}

/**
 * Checks the screen now shown in each language (chosen with the page's switcher) at each width, and
 * collects axe's violations in `found`. `ready` waits until the screen is drawn in that language;
 * `prepare` brings it into the state to check (an alert, say) first. Back to English at the end.
 */
export async function checkScreen<T = Texts>(
  page: Page,
  screen: string,
  found: string[],
  ready: (page: Page, t: T) => Promise<unknown>,
  prepare?: (page: Page, t: T) => Promise<unknown>,
  /** The page's texts by language: the reader's, unless the sender's page is checked. */
  table: Record<Language, T> = TEXTS as unknown as Record<Language, T>,
): Promise<void> {
  for (const lang of LANGUAGES) {
    const t = table[lang];
    await page.locator('#language').selectOption(lang);
    await page.waitForFunction(`document.documentElement.lang === ${JSON.stringify(lang)}`);
    await ready(page, t);
    await prepare?.(page, t);
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 360 ? 780 : 900 });
      await page.waitForTimeout(100);
      // Not inside the message's frame: its sandbox (no allow-scripts) lets no script run there, so axe's
      // per-frame run waits for it forever, and what it shows is the sender's HTML. The legacy run with
      // iframes: false still checks the <iframe> itself (frame-title) with the page.
      const results = await new AxeBuilder({ page }).setLegacyMode(true).options({ iframes: false }).analyze();
      found.push(...describeViolations(`${screen}, ${lang}, ${width} px`, results.violations));
      // The run did look: contrast and the page's language were checked, and passed.
      for (const rule of ['color-contrast', 'html-lang-valid'])
        assert.ok(
          results.passes.some((r) => r.id === rule),
          `${screen} ${lang}: ${rule} was checked`,
        );
      if (width === 360)
        assert.ok(
          (await page.evaluate<number>('document.documentElement.scrollWidth')) <= 360,
          `${screen} ${lang}: wider than 360 px`,
        );
      await page.screenshot({
        path: join(SCREENSHOTS, `a11y-${screen}-${lang}-${width}.png`),
        fullPage: width === 1280,
      });
    }
  }
  await page.locator('#language').selectOption('en');
  await page.waitForFunction("document.documentElement.lang === 'en'");
  await page.setViewportSize({ width: 1280, height: 900 });
}

export const heading = (name: string) => (page: Page) => page.getByRole('heading', { name, exact: true }).waitFor();

export function assertNone(found: string[]): void {
  if (found.length > 0) console.log(`axe found ${found.length} violation(s):\n${found.join('\n')}`);
  assert.equal(found.length, 0, `axe violations:\n${found.join('\n')}`);
}
