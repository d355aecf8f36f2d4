import { en, type Texts } from './en.ts';

/** The languages the page has texts for; a translation adds itself here. */
const LANGUAGES: Record<string, Texts> = { en };

/** The first of the browser's preferred languages we have, else English. */
export function pickTexts(preferred: readonly string[]): Texts {
  for (const tag of preferred) {
    const texts = LANGUAGES[tag.toLowerCase().split('-')[0]!];
    if (texts) return texts;
  }
  return en;
}

export type { Texts };
