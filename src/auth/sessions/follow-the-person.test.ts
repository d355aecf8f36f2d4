import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ALICE, BOB, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';

/**
 * A session keeps what it proved: an email code proves the address, an SMS code the address with that
 * number. Every sealed message whose method for that recipient the proof satisfies opens without a new code;
 * no other does.
 */
describe('sessions follow the person across sealed messages', () => {
  let harness: AuthHarness;
  before(async () => {
    harness = await startAuthHarness();
  });
  after(async () => {
    await harness?.stop();
  });

  const raw = (subject: string) =>
    `From: Sender <sender@example.org>\r\nTo: someone@example.com\r\nSubject: ${subject}\r\n\r\nHello.\r\n`;
  const OTHER_MOBILE = '+41797654321';

  async function signInBobByEmail(reader: Reader, messageId: string) {
    await reader.get(`/v1/config?messageId=${messageId}`);
    const sent = await reader.request('POST', '/v1/auth/code', {
      body: { messageId, email: BOB.email, method: 'email' },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const outbox = join(harness.auth.config.dataDir, 'outbox');
    const files = (await readdir(outbox)).filter((name) => name.endsWith('.eml')).sort();
    const code = /Your Sealpost code is (\d{6})/.exec(await readFile(join(outbox, files.at(-1)!), 'utf8'))![1]!;
    const verified = await reader.request('POST', '/v1/auth/verify', { body: { code } });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
  }
  const opens = async (reader: Reader, messageId: string) => {
    const config = await reader.get(`/v1/config?messageId=${messageId}`);
    const message = await reader.get(`/v1/message?messageId=${messageId}`);
    assert.equal(config.body.signedIn, message.status === 200, 'GET /v1/config agrees with what the session may read');
    return message.status === 200 ? (message.body.id as string) : message.status;
  };

  it('an email code opens every message whose method for that address is email, and no other', async () => {
    const a = harness.seal.register({ raw: raw('A'), recipients: [BOB], subject: 'A' });
    const b = harness.seal.register({
      raw: raw('B'),
      recipients: [{ ...BOB, email: 'Bob@Example.com' }],
      subject: 'B',
    });
    const bySms = harness.seal.register({
      raw: raw('C'),
      recipients: [{ email: BOB.email, method: 'sms', mobile: OTHER_MOBILE }],
      subject: 'C',
    });
    const notHis = harness.seal.register({ raw: raw('D'), recipients: [ALICE], subject: 'D' });
    const reader = harness.reader();
    await signInBobByEmail(reader, a.id);
    const codesBefore = harness.sms.messages.length;

    // A, B, A, B: no new code.
    assert.equal(await opens(reader, b.id), b.id);
    assert.equal(await opens(reader, a.id), a.id);
    assert.equal(await opens(reader, b.id), b.id);
    assert.equal(harness.sms.messages.length, codesBefore, 'no code was sent');
    // Not one he signs in to by SMS, nor someone else's.
    assert.equal(await opens(reader, bySms.id), 401);
    assert.equal(await opens(reader, notHis.id), 401);
    assert.equal((await reader.get(`/v1/message/reply?messageId=${notHis.id}`)).status, 401);
    assert.equal((await reader.get(`/v1/message/files?messageId=${notHis.id}`)).status, 401);

    const listed = await reader.get('/v1/messages');
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.messages.map((m: { id: string; subject: string; sender: string }) => [m.id, m.subject, m.sender]),
      [
        [b.id, 'B', b.sender],
        [a.id, 'A', a.sender],
      ],
      'newest first; only what the proof opens',
    );
  });

  it('an SMS code opens messages to that address with that number, not another number or email sign-in', async () => {
    const first = harness.sealSample();
    const sameNumber = harness.seal.register({ raw: raw('same number'), recipients: [ALICE], subject: 'same number' });
    const otherNumber = harness.seal.register({
      raw: raw('other number'),
      recipients: [{ ...ALICE, mobile: OTHER_MOBILE }],
      subject: 'other number',
    });
    const byEmail = harness.seal.register({
      raw: raw('by email'),
      recipients: [{ email: ALICE.email, method: 'email' }],
      subject: 'by email',
    });
    const reader = harness.reader();
    await signInAlice(harness, reader, first.id, true);

    assert.equal(await opens(reader, sameNumber.id), sameNumber.id);
    assert.equal(await opens(reader, otherNumber.id), 401);
    assert.equal(await opens(reader, byEmail.id), 401, 'an SMS code does not prove the mailbox');
    const ids = (await reader.get('/v1/messages')).body.messages.map((m: { id: string }) => m.id);
    assert.ok(ids.includes(first.id) && ids.includes(sameNumber.id));
    assert.ok(!ids.includes(otherNumber.id) && !ids.includes(byEmail.id));

    // Keep me signed in: the same cookie, after a browser restart, still opens both.
    const restarted = harness.reader();
    restarted.cookie = reader.cookie;
    assert.equal(await opens(restarted, sameNumber.id), sameNumber.id);
    assert.equal(await opens(restarted, first.id), first.id);
  });

  it('a session that proved nothing opens nothing and lists nothing', async () => {
    const record = harness.sealSample();
    const reader = harness.reader();
    await reader.get(`/v1/config?messageId=${record.id}`);
    assert.equal(await opens(reader, record.id), 401);
    assert.equal((await reader.get('/v1/messages')).status, 401);
  });
});
