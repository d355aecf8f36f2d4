import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ForbiddenTypes } from './file-type.ts';
import { cleanFilename } from './filename.ts';

describe('cleanFilename: names that cannot fool anyone', () => {
  it('drops a right-to-left override, so "invoice\\u202Efdp.exe" shows its real extension', () => {
    assert.equal(cleanFilename('invoice\u202Efdp.exe', 'attachment'), 'invoicefdp.exe');
  });

  const hidden = {
    'bidi embeddings and overrides': ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E'],
    'bidi isolates': ['\u2066', '\u2067', '\u2068', '\u2069'],
    'the Arabic letter mark': ['\u061C'],
    'zero-width characters and directional marks': ['\u200B', '\u200C', '\u200D', '\u200E', '\u200F'],
    'invisible operators and the word joiner': ['\u2060', '\u2061', '\u2062', '\u2063', '\u2064'],
    'the byte order mark': ['\uFEFF'],
    'the soft hyphen': ['\u00AD'],
    'C1 controls and line separators': ['\u0085', '\u009B', '\u2028', '\u2029'],
    'a tag character (outside the BMP)': ['\u{E0041}'],
  };
  for (const [what, characters] of Object.entries(hidden)) {
    it(`drops ${what}`, () => {
      for (const character of characters) {
        const code = `U+${character.codePointAt(0)!.toString(16).toUpperCase()}`;
        assert.equal(cleanFilename(`re${character}port.p${character}df${character}`, 'attachment'), 'report.pdf', code);
      }
    });
  }

  it('keeps what is visible: accents, other scripts, emoji, spaces inside the name', () => {
    for (const name of ['Vertrag – März.pdf', 'عقد.pdf', '契約書.pdf', 'résumé 2026 📄.docx'])
      assert.equal(cleanFilename(name, 'attachment'), name);
  });

  it('falls back for a name of only hidden characters, or one that is a path step without them', () => {
    assert.equal(cleanFilename('\u202E\u200B\uFEFF', 'attachment-2'), 'attachment-2');
    assert.equal(cleanFilename('.\u200B.', 'attachment'), 'attachment');
    assert.equal(cleanFilename('../\u202Eetc/passwd', 'attachment'), 'passwd');
  });

  it('finds a forbidden extension hidden by a zero-width space or soft hyphen: the name is checked as shown', () => {
    const forbidden = new ForbiddenTypes(['exe', 'js']);
    for (const raw of ['run.exe\u200B', 'setup.ex\u00ADe', 'report\u2066.js\u2069']) {
      assert.equal(forbidden.reason(raw, undefined), undefined, `${JSON.stringify(raw)} as sent slips past the check`);
      assert.match(
        forbidden.reason(cleanFilename(raw, 'attachment'), undefined) ?? '',
        /not allowed/,
        JSON.stringify(raw),
      );
    }
  });
});
