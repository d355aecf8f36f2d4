import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { shownHeader, withoutHidden } from './hidden-characters.ts';

describe('shownHeader: headers that cannot reorder or disguise themselves', () => {
  it('drops a right-to-left override, so "Invoice \\u202Efdp.exe\\u202C paid" reads as it is', () => {
    assert.equal(shownHeader('Invoice \u202Efdp.exe\u202C paid'), 'Invoice fdp.exe paid');
  });

  it('drops every bidi control, mark, zero-width and other format character', () => {
    const hidden = [
      ...'\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u200E\u200F\u061C',
      ...'\u200B\u200C\u200D\uFEFF\u2060\u2061\u2062\u2063\u2064\u00AD',
      '\u{E0041}',
    ];
    for (const character of hidden) {
      const code = `U+${character.codePointAt(0)!.toString(16).toUpperCase()}`;
      assert.equal(shownHeader(`Ma${character}llory${character}`), 'Mallory', code);
    }
  });

  it('turns a control between words into a space rather than joining the words', () => {
    assert.equal(shownHeader('Quarterly\treport\u2028draft'), 'Quarterly report draft');
    assert.equal(withoutHidden('run\t.exe'), 'run.exe', 'a name drops it altogether');
  });

  it('keeps right-to-left letters and emoji variation selectors, which are text', () => {
    assert.equal(shownHeader('שלום עליכם'), 'שלום עליכם');
    assert.equal(shownHeader('Bravo ❤️'), 'Bravo ❤️');
  });
});
