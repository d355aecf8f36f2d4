/** Half of a UTF-16 surrogate pair without its other half (from a broken encoded word, say). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Characters that draw nothing of their own but change what a name looks like: controls (C0, DEL, C1),
 * line and paragraph separators, and format characters (Unicode category Cf). Among the latter, bidi
 * controls (U+202A–U+202E, U+2066–U+2069, U+061C) make "invoice\u202Efdp.exe" look like "invoiceexe.pdf",
 * and zero-width characters (U+200B–U+200F, U+2060–U+2064, U+FEFF) and the soft hyphen (U+00AD) hide an
 * extension from a check that compares it ("run.exe\u200B") while it still shows as ".exe".
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/**
 * An attachment's name as Sealpost stores, lists, downloads and sends it: nothing hidden (above), no
 * path, at most 255 characters, never empty (`fallback` instead). The one rule for every name shown,
 * so what the forbidden-type check judged is what the reader sees.
 */
export function cleanFilename(raw: string | undefined, fallback: string): string {
  const name = Array.from(
    (raw ?? '').replace(LONE_SURROGATE, '\ufffd').replace(HIDDEN, '').split(/[\\/]/).pop()!.trim(),
  )
    // By code points: cutting UTF-16 units could leave half a character (a lone surrogate), which the
    // download's Content-Disposition cannot encode (encodeURIComponent throws: a 500, found by
    // test/security/path-traversal).
    .slice(0, 255)
    .join('');
  return name && name !== '.' && name !== '..' ? name : fallback;
}
