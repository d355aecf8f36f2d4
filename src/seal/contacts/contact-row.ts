import { normalizeEmail } from '../../kernel/email.ts';
import { languageOfTag, type Language } from '../../kernel/languages.ts';
import { normalizeMobile } from '../../kernel/mobile.ts';

/** A directory entry as the import writes it. */
export interface ContactEntry {
  email: string;
  emailKey: string;
  mobile: string;
  language: Language | null;
}

/** A row the import refused: its line (CSV) or position from 1 (JSON), and why. */
export interface RefusedRow {
  line: number;
  email?: string;
  reason: string;
}

/**
 * One row of a directory import, checked as the intake checks what a sender gives (docs/specification.md#contacts):
 * the address normalised as a recipient's is (kernel/email.ts), the number in E.164 after normalisation
 * (spaces, `00`), the language one Sealpost writes in (a tag such as `de-CH` counts as `de`; empty: none).
 */
export function contactEntry(
  row: { email?: unknown; mobile?: unknown; language?: unknown },
  line: number,
): ContactEntry | RefusedRow {
  const rawEmail = typeof row.email === 'string' ? row.email.trim() : '';
  if (!rawEmail) return { line, reason: 'email is missing' };
  const email = normalizeEmail(rawEmail);
  if (!email) return { line, email: rawEmail, reason: `email ${JSON.stringify(rawEmail)} is not a valid address` };
  const rawMobile = typeof row.mobile === 'string' ? row.mobile.trim() : '';
  if (!rawMobile) return { line, email, reason: 'mobile is missing' };
  const mobile = normalizeMobile(rawMobile);
  if (!mobile) {
    return {
      line,
      email,
      reason: `mobile ${JSON.stringify(rawMobile)} is not a valid number in international form (+41 79 123 45 67)`,
    };
  }
  const rawLanguage = typeof row.language === 'string' ? row.language.trim() : '';
  let language: Language | null = null;
  if (rawLanguage) {
    const known = languageOfTag(rawLanguage);
    if (!known) return { line, email, reason: `language ${JSON.stringify(rawLanguage)} is not one of en, de, fr, it` };
    language = known;
  }
  return { email, emailKey: email.toLowerCase(), mobile, language };
}

export function isRefused(entry: ContactEntry | RefusedRow): entry is RefusedRow {
  return 'reason' in entry;
}
