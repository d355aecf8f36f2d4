import { LANGUAGES, type Language } from '../../src/kernel/languages.ts';
import { h } from './dom.ts';
import { pickTexts, TEXTS, type Texts } from './texts/index.ts';

/**
 * What the language helpers need of a page's texts: the reader's (texts/) and the sender's (sender/texts/)
 * both have it.
 */
export type PageTexts = Pick<Texts, 'lang' | 'skipToContent' | 'language'>;

/** Each language by its own name, so that a reader who cannot read the page as it is still finds theirs. */
const NAMES: Record<Language, string> = { en: 'English', de: 'Deutsch', fr: 'Français', it: 'Italiano' };

/**
 * The link's `?lang=` first (the exchange writes the recipient's language there when one was chosen for
 * them, and the switcher keeps the reader's choice there), then the browser's languages, then English.
 */
export function initialTexts(): Texts;
export function initialTexts<T>(pick: (preferred: ReadonlyArray<string | null | undefined>) => T): T;
export function initialTexts(
  pick: (preferred: ReadonlyArray<string | null | undefined>) => unknown = pickTexts,
): unknown {
  const fromLink = new URLSearchParams(window.location.search).get('lang');
  return pick([fromLink, ...(navigator.languages ?? [navigator.language])]);
}

/**
 * The page around <main> in the chosen language: `<html lang>` (screen readers pick their voice by it),
 * the skip link, and, once the reader `chose` one in the switcher, `?lang=` in the address, replaced without
 * a reload, so that a reload or a bookmark keeps the choice. Not before: a language the page only guessed
 * (the browser's) in the address would outlive a change of the browser's language.
 */
export function applyLanguage(t: PageTexts, chose = false): void {
  document.documentElement.lang = t.lang;
  const skip = document.querySelector<HTMLAnchorElement>('.skip-link');
  if (skip) skip.textContent = t.skipToContent;
  if (!chose) return;
  const url = new URL(window.location.href);
  if (url.searchParams.get('lang') === t.lang) return;
  url.searchParams.set('lang', t.lang);
  window.history.replaceState(window.history.state, '', url);
}

/**
 * A labelled <select> in the page header, on every screen: keyboard-usable as it is, and each option
 * marked with its own language. `choose` gets the texts of the new language, from `table` (the reader's
 * texts unless another page gives its own).
 */
export function languageSwitcher<T extends PageTexts = Texts>(
  t: T,
  choose: (texts: T) => void,
  table: Record<Language, T> = TEXTS as unknown as Record<Language, T>,
): { element: HTMLElement; update(t: T): void } {
  const label = h('label', { for: 'language' }, t.language);
  const select = h(
    'select',
    { id: 'language', name: 'language' },
    ...LANGUAGES.map((language) =>
      h('option', { value: language, lang: language, selected: language === t.lang }, NAMES[language]),
    ),
  );
  select.addEventListener('change', () => choose(table[select.value as Language] ?? table.en));
  return {
    element: h('div', { class: 'language' }, label, select),
    update(next) {
      label.textContent = next.language;
      select.value = next.lang;
    },
  };
}

/**
 * Draws the screen shown again in the new language (`draw`), keeping what was typed into its fields, the
 * focus on the switcher and the scroll position. `settle` first lets the screen finish what it must (the
 * reply's pending save), so that nothing typed is lost when it loads afresh.
 */
export async function redrawKeeping(
  main: HTMLElement,
  settle: (() => Promise<unknown>) | undefined,
  draw: () => unknown,
): Promise<void> {
  await settle?.();
  const fields = () =>
    Array.from(main.querySelectorAll<HTMLInputElement>('input[name]')).filter((input) => input.type !== 'file');
  const typed = new Map(
    fields().map((input) => [input.name, input.type === 'checkbox' ? input.checked : input.value] as const),
  );
  const focused = document.activeElement;
  const scrolled = window.scrollY;
  await draw();
  for (const input of fields()) {
    const value = typed.get(input.name);
    if (input.disabled || value === undefined) continue;
    if (typeof value === 'boolean') input.checked = value;
    else input.value = value;
  }
  if (focused instanceof HTMLElement && focused.isConnected) focused.focus({ preventScroll: true });
  window.scrollTo(0, scrolled);
}
