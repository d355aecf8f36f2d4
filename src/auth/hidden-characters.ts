/**
 * Characters that draw nothing of their own but change what a text looks like: controls (C0, DEL, C1),
 * line and paragraph separators, and format characters (Unicode category Cf). Among the latter, bidi
 * controls (U+202A–U+202E, U+2066–U+2069, U+200E/U+200F, U+061C) make "invoice\u202Efdp.exe" look like
 * "invoiceexe.pdf", and zero-width characters (U+200B–U+200D, U+2060–U+2064, U+FEFF) and the soft hyphen
 * (U+00AD) hide a difference from a check that compares the text while it looks the same. The zero-width
 * joiner goes too (docs/decisions.md#the-reader-part-a-sessions-and-headers): an emoji family then shows as its
 * members.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const FORMAT = /^\p{Cf}$/u;

/**
 * `text` without hidden characters: the one rule for every name and header the reader sees (attachment names,
 * Subject, From/To/Cc/Reply-To, the sender before sign-in), so that what is shown is what was checked. A
 * control or separator between words (a tab, U+2028) becomes a space when `breaksAs` says so; a format
 * character never separates anything and goes.
 */
export function withoutHidden(text: string, breaksAs: '' | ' ' = ''): string {
  return text.replace(HIDDEN, (character) => (FORMAT.test(character) ? '' : breaksAs));
}

/** A header as the reader page shows it: nothing hidden, a control between words a space, no edge spaces. */
export function shownHeader(text: string): string {
  return withoutHidden(text, ' ').trim();
}
