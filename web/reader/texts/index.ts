import { languageOfTag, type Language } from '../../../src/kernel/languages.ts';
import { de } from './de.ts';
import { en, type Texts } from './en.ts';
import { fr } from './fr.ts';
import { it } from './it.ts';

/** Every language the page has texts for: the kernel's list, so the page speaks what the emails speak. */
export const TEXTS: Record<Language, Texts> = { en, de, fr, it };

/** The first of the given language tags (`de-CH`, `fr`) we have texts for, else English. */
export function pickTexts(preferred: ReadonlyArray<string | null | undefined>): Texts {
  for (const tag of preferred) {
    const language = tag ? languageOfTag(tag) : undefined;
    if (language) return TEXTS[language];
  }
  return en;
}

export type { Texts };
