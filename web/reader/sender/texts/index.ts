import { languageOfTag, type Language } from '../../../../src/kernel/languages.ts';
import { de } from './de.ts';
import { en, type SenderTexts } from './en.ts';
import { fr } from './fr.ts';
import { it } from './it.ts';

/** The sender's page in every language the reader page speaks. */
export const SENDER_TEXTS: Record<Language, SenderTexts> = { en, de, fr, it };

/** The first of the given language tags (`de-CH`, `fr`) we have texts for, else English. */
export function pickSenderTexts(preferred: ReadonlyArray<string | null | undefined>): SenderTexts {
  for (const tag of preferred) {
    const language = tag ? languageOfTag(tag) : undefined;
    if (language) return SENDER_TEXTS[language];
  }
  return en;
}

export type { SenderTexts };
