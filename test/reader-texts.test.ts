import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CODES } from '../src/kernel/error-codes.ts';
import { ApiError } from '../web/reader/api-error.ts';
import { errorText } from '../web/reader/errors.ts';
import { en } from '../web/reader/texts/en.ts';
import { pickTexts, TEXTS, type Texts } from '../web/reader/texts/index.ts';

/**
 * Every errorCode the services can answer has its own sentence on the page, in every language. en.ts and
 * the translations check this with `satisfies` too, but only the type checker sees that; this runs with
 * the tests.
 */

/**
 * The auth service's codes as docs/specification.md#error-codes lists them, written out rather than read from
 * the code under test.
 */
const SPEC_CODES = [
  'expired_code',
  'incorrect_code',
  'invalid_email',
  'invalid_mobile',
  'invalid_code_or_email',
  'invalid_bcc_address',
  'email_mismatch',
  'unauthorized_user',
  'forbidden_auth_method',
  'forbidden_file_type',
  'malware_detected',
  'file_too_large',
  'upload_limit_reached',
  'new_mobile_conflict',
  'sms_rate_limit',
  'email_and_mobile_mismatch',
];

/** Where `a` and `b` differ in shape: a key only in one, or a string where the other has a function. */
function shapeDifferences(a: unknown, b: unknown, path = ''): string[] {
  if (typeof a !== typeof b) return [`${path || '(root)'}: ${typeof a} against ${typeof b}`];
  if (typeof a !== 'object' || a === null || b === null) return [];
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
  return [...keys].flatMap((key) =>
    key in left && key in right
      ? shapeDifferences(left[key], right[key], `${path}.${key}`)
      : [`${path}.${key}: only in ${key in left ? 'one' : 'the other'}`],
  );
}

const LANGUAGES = Object.entries(TEXTS) as Array<[string, Texts]>;

describe('the reader page texts', () => {
  it('are there in English, German, French and Italian, each with the keys of en.ts', () => {
    assert.deepEqual(Object.keys(TEXTS).sort(), ['de', 'en', 'fr', 'it']);
    for (const [language, texts] of LANGUAGES) {
      assert.equal(texts.lang, language);
      assert.deepEqual(shapeDifferences(en, texts), [], `${language} has the shape of en`);
    }
  });

  it('know every errorCode of the spec and of the services, and no other, in every language', async () => {
    const codes: readonly string[] = ERROR_CODES;
    assert.ok(codes.length >= SPEC_CODES.length);
    for (const code of SPEC_CODES) assert.ok(codes.includes(code), `${code} (spec) is missing from ErrorCode`);
    for (const [language, texts] of LANGUAGES)
      assert.deepEqual(Object.keys(texts.errors).sort(), [...codes].sort(), language);
  });

  it('show a sentence of its own for each errorCode, never the server message, in every language', async () => {
    for (const [language, texts] of LANGUAGES) {
      for (const code of ERROR_CODES) {
        const sentence = (texts.errors as Record<string, string>)[code];
        assert.equal(typeof sentence, 'string', `${language} ${code}`);
        assert.match(sentence!, /^\p{Lu}.{10,}[.!]$/u, `${language} ${code}: a whole sentence`);
        assert.ok(
          !sentence!.includes(code) && !/[{}_]/.test(sentence!),
          `${language} ${code}: no code or JSON in the sentence`,
        );
        if (language !== 'en')
          assert.notEqual(sentence, (en.errors as Record<string, string>)[code], `${language} ${code}: translated`);
        // At a 4xx and a 5xx: the fallback sentences of the two differ, so only the errorCode gives both the same.
        for (const status of [400, 503]) {
          const shown = errorText(
            texts,
            new ApiError(status, code, 'some-id', undefined, 'technical message for the log'),
          );
          assert.equal(shown, sentence, `${language} ${code} at ${status}`);
        }
      }
    }
  });

  it('are picked by the first language tag the page has, else English', () => {
    assert.equal(pickTexts(['de-CH', 'en']).lang, 'de');
    assert.equal(pickTexts(['es', 'FR-ca', 'de']).lang, 'fr');
    assert.equal(pickTexts([undefined, 'it']).lang, 'it');
    assert.equal(pickTexts(['es', 'pt-BR']).lang, 'en');
    assert.equal(pickTexts([]).lang, 'en');
  });
});

describe("the README's words for the reader page", () => {
  it('quotes every button it names as the English page labels it', async () => {
    const readme = await (await import('node:fs/promises')).readFile(new URL('../README.md', import.meta.url), 'utf8');
    const pressed = [...readme.matchAll(/press "([^"]+)"/g)].map((match) => match[1]!);
    assert.ok(pressed.length > 0, 'the README names a button');
    const labels = new Set<string>();
    const collect = (value: unknown): void => {
      if (typeof value === 'string') labels.add(value);
      else if (value && typeof value === 'object') for (const inner of Object.values(value)) collect(inner);
    };
    collect(en);
    for (const label of pressed) assert.ok(labels.has(label), `the reader page has no "${label}"`);
  });
});
