import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALICE, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';

const BIDI_SUBJECT = 'Invoice \u202Efdp.exe\u202C paid';
const raw = (subject: string, from: string) =>
  `From: ${from}\r\nTo: Alice <alice@example.com>\r\nCc: "\u2067Team\u2069" <team@example.org>\r\n` +
  `Subject: ${subject}\r\nX-Sealpost-Mobile: alice@example.com=${ALICE.mobile}\r\n\r\nPlease pay.\r\n`;

/**
 * What the auth service tells before sign-in, and how every header the reader page shows comes out of it:
 * who sent the message and nothing of its subject by default; no hidden characters anywhere.
 */
describe('before sign-in, only who sent it; every header without hidden characters', () => {
  let plain: AuthHarness;
  let optedIn: AuthHarness;
  before(async () => {
    plain = await startAuthHarness();
    optedIn = await startAuthHarness({
      env: { READER_SUBJECT_BEFORE_SIGN_IN: 'true', AUTH_PUBLIC_URL: 'https://reader.example.org' },
    });
  });
  after(async () => {
    await plain?.stop();
    await optedIn?.stop();
  });

  it('GET /v1/config names the sender without the subject by default', async () => {
    const record = plain.seal.register({
      raw: raw(BIDI_SUBJECT, 'Sender <sender@example.org>'),
      recipients: [ALICE],
      sender: 'Mallory\u202E <mallory@example.org>',
      subject: BIDI_SUBJECT,
    });
    const config = await plain.reader().get(`/v1/config?messageId=${record.id}`);
    assert.equal(config.status, 200);
    assert.equal(config.body.sender, 'Mallory <mallory@example.org>', 'the sender, without the override');
    assert.equal('subject' in config.body, false, JSON.stringify(config.body));
  });

  it('GET /v1/config names the subject, cleaned, with READER_SUBJECT_BEFORE_SIGN_IN=true', async () => {
    const record = optedIn.seal.register({
      raw: raw(BIDI_SUBJECT, 'x@example.org'),
      recipients: [ALICE],
      subject: BIDI_SUBJECT,
    });
    const config = await optedIn.reader().get(`/v1/config?messageId=${record.id}`);
    assert.equal(config.body.subject, 'Invoice fdp.exe paid');
  });

  it('GET /v1/message and /v1/messages show Subject, From and Cc without bidi or zero-width characters', async () => {
    const record = plain.seal.register({
      raw: raw(BIDI_SUBJECT, '"Bank\u200B Support\u202E" <support@bank.example>'),
      recipients: [ALICE],
      sender: 'support@bank.example\u200F',
      subject: BIDI_SUBJECT,
    });
    const reader = plain.reader();
    await signInAlice(plain, reader, record.id);
    const message = await reader.get(`/v1/message?messageId=${record.id}`);
    assert.equal(message.status, 200, JSON.stringify(message.body));
    assert.equal(message.body.subject, 'Invoice fdp.exe paid');
    assert.deepEqual(message.body.from, [{ name: 'Bank Support', address: 'support@bank.example' }]);
    assert.deepEqual(message.body.cc, [{ name: 'Team', address: 'team@example.org' }]);
    const listed = (await reader.get('/v1/messages')).body.messages as Array<{
      id: string;
      sender: string;
      subject: string;
    }>;
    const entry = listed.find((m) => m.id === record.id);
    assert.equal(entry?.subject, 'Invoice fdp.exe paid');
    assert.equal(entry?.sender, 'support@bank.example');
  });

  it('sends HSTS on every answer when AUTH_PUBLIC_URL is https, and none over http', async () => {
    for (const path of ['/v1/config', '/logout', '/no-such-page', '/healthz']) {
      const secure = await fetch(`${optedIn.auth.url}${path}`, { headers: { accept: 'text/html' } });
      assert.equal(secure.headers.get('strict-transport-security'), 'max-age=31536000', path);
      const plainAnswer = await fetch(`${plain.auth.url}${path}`, { headers: { accept: 'text/html' } });
      assert.equal(plainAnswer.headers.get('strict-transport-security'), null, path);
    }
  });
});
