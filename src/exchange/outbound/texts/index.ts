import type { Language } from '../../../kernel/languages.ts';
import { de } from './de.ts';
import { en, type NotificationTexts } from './en.ts';
import { fr } from './fr.ts';
import { it } from './it.ts';

/** Every language's notification texts; `satisfies` makes a language of LANGUAGES without texts a type error. */
export const NOTIFICATION_TEXTS = { en, de, fr, it } satisfies Record<Language, NotificationTexts>;

export type { NotificationTexts };
