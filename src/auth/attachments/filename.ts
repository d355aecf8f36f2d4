import { withoutHidden } from '../hidden-characters.ts';

/** Half of a UTF-16 surrogate pair without its other half (from a broken encoded word, say). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * An attachment's name as Sealpost stores, lists, downloads and sends it: nothing hidden (hidden-characters.ts), no
 * path, at most 255 characters, never empty (`fallback` instead). The one rule for every name shown,
 * so what the forbidden-type check judged is what the reader sees.
 */
export function cleanFilename(raw: string | undefined, fallback: string): string {
  const name = Array.from(
    withoutHidden((raw ?? '').replace(LONE_SURROGATE, '\ufffd'))
      .split(/[\\/]/)
      .pop()!
      .trim(),
  )
    // By code points: cutting UTF-16 units could leave half a character (a lone surrogate), which the
    // download's Content-Disposition cannot encode (encodeURIComponent throws: a 500, found by
    // test/security/path-traversal).
    .slice(0, 255)
    .join('');
  return name && name !== '.' && name !== '..' ? name : fallback;
}
