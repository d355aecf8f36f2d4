import { domainToASCII } from 'node:url';

/**
 * RFC 5321 §4.1.2 Quoted-string followed by `@`: qtextSMTP (printable ASCII but `"` and `\`, and UTF-8
 * with SMTPUTF8, RFC 6531 §3.3) or a quoted-pairSMTP (a backslash and a printable ASCII character).
 */
const QUOTED_LOCAL_AT = /^"(?:[^"\\\x00-\x1f\x7f]|\\[\x20-\x7e])+"@/;

/**
 * Normalises a bare email address (no display name) for comparison: trimmed, domain lower-cased and
 * IDN domains turned into punycode (docs/design.md#recipients). The local part keeps its
 * case: RFC 5321 lets a mailbox be case-sensitive, and the sender's spelling is the one on record.
 * Returns undefined for anything that is not a plausible addr-spec.
 *
 * Hand-written because the libraries at hand either parse whole header lists (nodemailer's
 * addressparser, which accepts almost anything) or validate without normalising.
 */
export function normalizeEmail(input: string): string | undefined {
  const text = input.trim();
  // A quoted local part is set aside for the check of the rest: inside it, specials and escaped quotes
  // and backslashes are allowed.
  if (text.length > 254 || /[\s<>(),;:"\\[\]]/.test(text.replace(QUOTED_LOCAL_AT, 'q@'))) return undefined;
  const at = text.lastIndexOf('@');
  if (at <= 0 || at === text.length - 1) return undefined;
  const local = text.slice(0, at);
  const domain = text.slice(at + 1).replace(/\.$/, '');
  // A quoted local part (`"quoted local"@example.org`, `"we\\"ird"@example.org`, RFC 5321 §4.1.2) may hold
  // spaces, dots and specials anywhere, and a quote or backslash escaped by a backslash.
  const quoted = QUOTED_LOCAL_AT.test(`${local}@`);
  if (
    local.length > 64 ||
    (!quoted && (!/^[^@\s]+$/.test(local) || local.startsWith('.') || local.endsWith('.') || local.includes('..')))
  ) {
    return undefined;
  }
  const ascii = domainToASCII(domain.toLowerCase());
  if (
    !ascii ||
    !/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(ascii)
  ) {
    return undefined;
  }
  return `${local}@${ascii}`;
}
