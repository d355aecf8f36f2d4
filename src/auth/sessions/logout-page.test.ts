import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { confirmSignOutPage, pageLanguage, signedOutPage } from './logout-page.ts';

describe('the sign-out pages', () => {
  it("speak the browser's first language that Sealpost writes, by weight, else English", () => {
    assert.equal(pageLanguage('de-CH,de;q=0.9,en;q=0.8'), 'de');
    assert.equal(pageLanguage('es-ES,es;q=0.9,fr;q=0.8,it;q=0.9'), 'it', 'the heavier of the two it knows');
    assert.equal(pageLanguage('fr;q=0,en;q=0.5'), 'en', 'q=0 means not this one');
    assert.equal(pageLanguage('es'), 'en');
    assert.equal(pageLanguage(undefined), 'en');
  });

  it('put the CSRF token into the form escaped, and link back only to a message of ours', () => {
    const page = confirmSignOutPage('en', 'a"b<c', 'abc-123');
    assert.match(page, /name="csrf" value="a&#34;b&#60;c"/);
    assert.match(page, /<a href="\/m\/abc-123">Back to your message<\/a>/);
    assert.doesNotMatch(signedOutPage('it', undefined), /<a /, 'no link when no message is known');
  });
});
