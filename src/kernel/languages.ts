/**
 * The languages Sealpost writes to recipients in (notifications, email codes, the reader page). One
 * list: the type, the schemas' enums and the configuration's allowed values all come from it. The reader
 * page (web/reader) bundles this file, so it imports nothing and needs neither Node nor the DOM.
 */
export const LANGUAGES = ['en', 'de', 'fr', 'it'] as const;

export type Language = (typeof LANGUAGES)[number];

export function isLanguage(value: unknown): value is Language {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}

/**
 * The supported language of a BCP 47 tag (`de`, `de-CH`, `FR`), or undefined for one Sealpost does not
 * write in. Only the primary subtag counts: Swiss German readers get the German texts.
 */
export function languageOfTag(tag: string): Language | undefined {
  const primary = /^\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]{1,8})*\s*$/.exec(tag)?.[1]?.toLowerCase();
  return isLanguage(primary) ? primary : undefined;
}
