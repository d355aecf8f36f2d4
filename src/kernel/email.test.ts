import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeEmail } from './email.ts';

describe('normalizeEmail', () => {
  it('trims, lower-cases the domain and keeps the local part as written', () => {
    assert.equal(normalizeEmail('  Alice.Smith@Example.COM '), 'Alice.Smith@example.com');
  });
  it('turns IDN domains into punycode so both spellings compare equal', () => {
    assert.equal(normalizeEmail('anna@bücher.example'), 'anna@xn--bcher-kva.example');
    assert.equal(normalizeEmail('anna@XN--BCHER-KVA.example'), 'anna@xn--bcher-kva.example');
  });
  it('accepts plus tags, single-label hosts and a trailing root dot', () => {
    assert.equal(normalizeEmail('a+tag@localhost'), 'a+tag@localhost');
    assert.equal(normalizeEmail('a@example.org.'), 'a@example.org');
  });
  it('refuses what is not a bare address', () => {
    for (const bad of [
      '',
      'alice',
      '@example.com',
      'alice@',
      'Alice <alice@example.com>',
      'a b@example.com',
      'a@exa mple.com',
      'a@-bad-.com',
      'a..b@example.com',
      '.a@example.com',
      'a@b@c',
      'a@example.com\r\nBcc: x@y.z',
      `${'x'.repeat(65)}@example.com`,
      // Quoted local parts that are not Quoted-strings: an unescaped quote, the closing quote escaped,
      // no closing quote, an empty one, a control character, a header injection.
      '"a"b"@example.com',
      '"a\\"@example.com',
      '"ab@example.com',
      '""@example.com',
      '"a\tb"@example.com',
      '"a"@example.com\r\nBcc: x@y.z',
    ]) {
      assert.equal(normalizeEmail(bad), undefined, JSON.stringify(bad));
    }
  });
  it('accepts quoted local parts with escaped quotes and backslashes (RFC 5321 §4.1.2), kept as written', () => {
    for (const good of [
      '"we\\"ird"@example.com',
      '"back\\\\slash"@example.com',
      '"quoted local"@example.com',
      '"a@b"@example.com',
      '"(specials);<>,:"@example.com',
      '"\\a"@example.com',
    ]) {
      assert.equal(normalizeEmail(good), good, good);
    }
    assert.equal(normalizeEmail('"we\\"ird"@Example.COM'), '"we\\"ird"@example.com');
  });
});
