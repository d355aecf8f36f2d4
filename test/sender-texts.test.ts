import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CODES } from '../src/kernel/error-codes.ts';
import { ApiError } from '../web/reader/api-error.ts';
import { errorText } from '../web/reader/errors.ts';
import { en } from '../web/reader/sender/texts/en.ts';
import { pickSenderTexts, SENDER_TEXTS, type SenderTexts } from '../web/reader/sender/texts/index.ts';
import { TEXTS } from '../web/reader/texts/index.ts';

/** The sender's page's texts (web/reader/sender/texts), checked as test/reader-texts.test.ts checks the reader's. */

/** Every leaf of a texts object by its path: strings as they are, functions called with sample values. */
function leaves(value: unknown, path = ''): Array<[string, string]> {
  if (typeof value === 'string') return [[path, value]];
  if (typeof value === 'function') {
    const args = Array.from({ length: value.length }, (_, i) => (i === 0 ? '2' : 'x@example.com'));
    return [[path, String((value as (...a: unknown[]) => unknown)(...args))]];
  }
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => leaves(child, `${path}.${key}`));
}

const LANGUAGES = Object.entries(SENDER_TEXTS) as Array<[string, SenderTexts]>;

describe("the sender's page texts", () => {
  it('are there in English, German, French and Italian, each with the keys of en.ts', () => {
    assert.deepEqual(Object.keys(SENDER_TEXTS).sort(), ['de', 'en', 'fr', 'it']);
    const shape = leaves(en).map(([path]) => path);
    for (const [language, texts] of LANGUAGES) {
      assert.equal(texts.lang, language);
      assert.deepEqual(
        leaves(texts).map(([path]) => path),
        shape,
        `${language} has the shape of en`,
      );
    }
  });

  it('are translated: every sentence of its own differs from the English one', () => {
    const english = new Map(leaves(en));
    // Words that are the same in these languages.
    const same = new Set(['.appName', '.code.label']);
    for (const [language, texts] of LANGUAGES) {
      if (language === 'en') continue;
      for (const [path, value] of leaves(texts)) {
        // The units are the reader's (2 KB is 2 KB in German too), checked with its texts.
        if (same.has(path) || path === '.lang' || path.startsWith('.units.')) continue;
        assert.notEqual(value, english.get(path), `${language} ${path}: translated`);
      }
    }
  });

  it('show a sentence for each errorCode in every language, the sender’s own where the reader’s would mislead', () => {
    for (const [language, texts] of LANGUAGES) {
      assert.deepEqual(Object.keys(texts.errors).sort(), [...ERROR_CODES].sort(), language);
      for (const code of ERROR_CODES) {
        const sentence = texts.errors[code];
        assert.match(sentence, /^\p{Lu}.{10,}[.!]$/u, `${language} ${code}: a whole sentence`);
        assert.equal(errorText(texts, new ApiError(400, code, 'id', undefined, 'for the log')), sentence);
      }
      const reader = TEXTS[texts.lang];
      for (const code of ['unauthorized_user', 'not_found', 'message_withdrawn', 'message_expired'] as const)
        assert.notEqual(texts.errors[code], reader.errors[code], `${language} ${code}: said to a sender`);
    }
  });

  it('are picked by the first language tag the page has, else English', () => {
    assert.equal(pickSenderTexts(['de-CH', 'en']).lang, 'de');
    assert.equal(pickSenderTexts(['es', 'FR-ca']).lang, 'fr');
    assert.equal(pickSenderTexts([undefined, 'it']).lang, 'it');
    assert.equal(pickSenderTexts(['pt-BR']).lang, 'en');
  });
});
