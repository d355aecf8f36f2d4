import type { Language } from '../../../kernel/languages.ts';
import { de } from './de.ts';
import { en, type CodeMailTexts } from './en.ts';
import { fr } from './fr.ts';
import { it } from './it.ts';

/** Every language's code-email texts; `satisfies` makes a language of LANGUAGES without texts a type error. */
export const CODE_MAIL_TEXTS = { en, de, fr, it } satisfies Record<Language, CodeMailTexts>;
