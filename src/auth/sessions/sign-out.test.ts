import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BOB, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';

const HTML = { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8' };

/**
 * Sign-out the recipient controls: another site cannot end a session by sending the browser to GET /logout,
 * a person gets a page rather than JSON, and "sign out everywhere" ends every session of the same person.
 */
describe('signing out', () => {
  let harness: AuthHarness;
  before(async () => {
    // Alice signs in afresh for each case: no wait between her codes.
    harness = await startAuthHarness({
      env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_NUMBER_HOURLY: '100', SMS_LIMIT_IP_HOURLY: '100' },
    });
  });
  after(async () => {
    await harness?.stop();
  });

  async function signedIn(): Promise<{ reader: Reader; messageId: string }> {
    const { id } = harness.sealSample();
    const reader = harness.reader();
    await signInAlice(harness, reader, id);
    return { reader, messageId: id };
  }
  const stillSignedIn = async (reader: Reader, messageId: string) =>
    (await reader.get(`/v1/message?messageId=${messageId}`)).status === 200;

  it('keeps the session when another site sends the browser to GET /logout, and asks to confirm', async () => {
    const { reader, messageId } = await signedIn();
    for (const site of ['cross-site', 'same-site']) {
      const answer = await reader.request('GET', '/logout', {
        headers: { ...HTML, 'sec-fetch-site': site, 'sec-fetch-mode': 'navigate', 'accept-language': 'de-CH' },
      });
      assert.equal(answer.status, 200, site);
      assert.equal(answer.setCookie, undefined, `${site}: the cookie is not cleared`);
      const page = answer.body.toString('utf8');
      assert.match(page, /<html lang="de">/);
      assert.match(page, /<form method="post" action="\/logout">/);
      assert.match(page, new RegExp(`name="csrf" value="${reader.csrf}"`), 'the form carries the session CSRF token');
      assert.match(page, new RegExp(`href="/m/${messageId}"`), 'a way back to the message');
      assert.match(answer.headers.get('content-security-policy') ?? '', /form-action 'self'/);
      assert.ok(await stillSignedIn(reader, messageId), `${site}: still signed in`);
    }
  });

  it('signs out by the confirmation form (token in the form field), answering a page', async () => {
    const { reader, messageId } = await signedIn();
    const token = reader.csrf!;
    const postForm = (body: string, site: string) =>
      fetch(`${harness.auth.url}/logout`, {
        method: 'POST',
        headers: {
          ...HTML,
          cookie: reader.cookie!,
          'content-type': 'application/x-www-form-urlencoded',
          'sec-fetch-site': site,
          'accept-language': 'fr-FR,fr;q=0.9',
        },
        body,
      });
    assert.equal((await postForm('csrf=not-the-token', 'same-origin')).status, 403, 'a wrong token is refused');
    assert.equal((await postForm('', 'same-origin')).status, 403, 'no token is refused');
    assert.equal(
      (await postForm(`csrf=${encodeURIComponent(token)}`, 'cross-site')).status,
      403,
      'a post from another site is refused even with the token',
    );
    assert.ok(await stillSignedIn(reader, messageId));

    const confirmed = await postForm(`csrf=${encodeURIComponent(token)}`, 'same-origin');
    assert.equal(confirmed.status, 200);
    assert.match(confirmed.headers.get('content-type') ?? '', /text\/html/);
    assert.match(confirmed.headers.get('set-cookie') ?? '', /=; Max-Age=-1/);
    const page = await confirmed.text();
    assert.match(page, /Vous êtes déconnecté/);
    assert.match(page, new RegExp(`href="/m/${messageId}"`));
    assert.equal(await stillSignedIn(reader, messageId), false, 'the session ended');
  });

  it('signs out a direct GET /logout, answering a person with a page and the reader page with JSON', async () => {
    const person = await signedIn();
    const typedIn = await person.reader.request('GET', '/logout', { headers: { ...HTML, 'sec-fetch-site': 'none' } });
    assert.equal(typedIn.status, 200);
    assert.match(typedIn.headers.get('content-type') ?? '', /text\/html/);
    assert.match(typedIn.setCookie ?? '', /=; Max-Age=-1/, 'the cookie is cleared: empty value, negative Max-Age');
    const page = typedIn.body.toString('utf8');
    assert.match(page, /<h1>You are signed out<\/h1>/);
    assert.doesNotMatch(page, /signedOut/, 'not the raw JSON');
    assert.equal(await stillSignedIn(person.reader, person.messageId), false);

    const page2 = await signedIn();
    const fetched = await page2.reader.request('GET', '/logout', {
      headers: { accept: 'application/json', 'sec-fetch-site': 'same-origin' },
    });
    assert.deepEqual(fetched.body, { signedOut: true });
    assert.equal(await stillSignedIn(page2.reader, page2.messageId), false);
  });

  it("signing out everywhere ends the person's other sessions, on other messages too, and no one else's", async () => {
    const first = await signedIn();
    const second = await signedIn();
    const bob = harness.reader();
    const bobsMessage = harness.seal.register({ raw: 'Subject: B\r\n\r\nHi.\r\n', recipients: [BOB] });
    await bob.get(`/v1/config?messageId=${bobsMessage.id}`);
    const stranger = harness.reader();
    await stranger.get('/v1/config');

    const forged = await first.reader.request('POST', '/v1/auth/sign-out-everywhere', { csrf: 'wrong' });
    assert.equal(forged.status, 403, 'CSRF-protected');
    assert.ok(await stillSignedIn(second.reader, second.messageId));

    const answer = await first.reader.request('POST', '/v1/auth/sign-out-everywhere');
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.signedOut, true);
    assert.ok(answer.body.sessionsEnded >= 2, `ended ${answer.body.sessionsEnded}`);
    assert.match(answer.setCookie ?? '', /=; Max-Age=-1/);
    assert.equal(await stillSignedIn(second.reader, second.messageId), false, "the other browser's session ended");
    assert.equal(await stillSignedIn(second.reader, first.messageId), false);
    // Sessions of other people stay: the not-signed-in one still answers with its own CSRF token.
    const strangerConfig = await stranger.get('/v1/config');
    assert.equal(strangerConfig.setCookie, undefined, 'the stranger kept the session (no new cookie)');
    assert.equal((await bob.get('/v1/config')).setCookie, undefined, "Bob's session stays");
  });
});
