import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { ALICE, SAMPLE_MESSAGE, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader, ReaderResponse } from '../../../test/support/auth-reader.ts';
import { uploadFile } from '../../../test/support/multipart-upload.ts';
import { EndedDrafts, ENDED_QUERY_MAX } from '../drafts/ended.ts';
import { SealClient } from '../seal/client.ts';
import type { AuthTables } from '../tables.ts';

/**
 * A sealed message's end as the auth service enforces it (docs/specification.md#end-dates), against the seal
 * stand-in, which ends messages as B does: 410 message_expired / message_withdrawn with endedAt and contact from
 * every read and reply endpoint, at once for open sessions (no session row, grant or cache stands for B's answer),
 * no code for an ended message, and the reply drafts of ended messages deleted.
 */

const CAROL = { email: 'carol@example.com', method: 'sms' as const, mobile: '+41795550002' };
const SENDER = 'sender@example.org';
const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(500, 7), Buffer.from('\n%%EOF\n')]);
const WITH_ATTACHMENT = [
  'From: Sender <sender@example.org>',
  'To: alice@example.com, carol@example.com',
  'Subject: Contract',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="b"',
  '',
  '--b',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Please sign the contract.',
  '--b',
  'Content-Type: text/plain; name="terms.txt"',
  'Content-Disposition: attachment; filename="terms.txt"',
  '',
  'The terms.',
  '--b--',
  '',
].join('\n');

async function signIn(
  harness: AuthHarness,
  reader: Reader,
  messageId: string,
  who: { email: string; mobile: string },
): Promise<ReaderResponse> {
  await reader.get(`/v1/config?messageId=${messageId}`);
  const sent = await reader.request('POST', '/v1/auth/code', {
    body: { messageId, email: who.email, mobile: who.mobile, method: 'sms' },
  });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const verified = await reader.request('POST', '/v1/auth/verify', {
    body: { code: harness.sms.lastCodeTo(who.mobile) },
  });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
  return verified;
}

/** The 410 of an ended message: its errorCode, when it ended and whom to ask. */
function assertEnded(response: { status: number; body: any }, errorCode: string, endedAt: string, what: string) {
  const context = `${what}: ${response.status} ${JSON.stringify(response.body)}`;
  assert.equal(response.status, 410, context);
  assert.equal(response.body.kind, 410, context);
  assert.equal(response.body.errorCode, errorCode, context);
  assert.equal(response.body.endedAt, endedAt, context);
  assert.equal(response.body.contact, SENDER, context);
}

describe("a sealed message's end on the auth service", () => {
  let harness: AuthHarness;
  let db: Kysely<AuthTables>;
  const draftsOf = (messageId: string) =>
    db.selectFrom('drafts').select(['id', 'email_key']).where('message_id', '=', messageId).execute();
  const fileKeysOf = (messageId: string) =>
    db
      .selectFrom('draft_files')
      .innerJoin('drafts', 'drafts.id', 'draft_files.draft_id')
      .select('object_key')
      .where('drafts.message_id', '=', messageId)
      .execute();
  const exists = async (key: string) => (await harness.auth.objects.head(key)) !== undefined;

  /** A draft with text and one file, by `reader` for the message. */
  async function draftWithFile(reader: Reader, messageId: string): Promise<string> {
    const saved = await reader.request('PUT', `/v1/message/reply?messageId=${messageId}`, { body: { text: 'Hi' } });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    const uploaded = await uploadFile(reader, { filename: 'signed.pdf', content: PDF, messageId });
    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    const [file] = await fileKeysOf(messageId);
    assert.ok(file && (await exists(file.object_key)));
    return file.object_key;
  }

  before(async () => {
    harness = await startAuthHarness({
      env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: '200ms' },
    });
    db = harness.auth.database.db.withSchema('auth') as Kysely<AuthTables>;
  });
  after(async () => {
    await harness?.stop();
  });

  it('ends a withdrawn recipient’s access at once, open sessions included; the other reads on', async () => {
    const record = harness.seal.register({ raw: WITH_ATTACHMENT, recipients: [ALICE, CAROL], sender: SENDER });
    // Alice's session signs in for another message of hers last, and opens this one by its grant.
    const later = harness.seal.register({ raw: SAMPLE_MESSAGE, recipients: [ALICE], sender: SENDER });
    const alice = harness.reader();
    const carol = harness.reader();
    await signIn(harness, alice, record.id, ALICE);
    await signIn(harness, alice, later.id, ALICE);
    await signIn(harness, carol, record.id, CAROL);
    const q = `?messageId=${record.id}`;
    assert.equal((await alice.get(`/v1/message${q}`)).status, 200);
    assert.equal((await alice.get(`/v1/message/attachments/0${q}`)).status, 200);
    const objectKey = await draftWithFile(alice, record.id);
    const fileId = (await alice.get(`/v1/message/files${q}`)).body.files[0].id;
    assert.ok(fileId);
    // The content is asked for its reader, so that B can tell a withdrawal for them alone.
    const contentReads = harness.seal.requests.filter((r) => r.url.startsWith(`/v1/sealed/${record.id}/content`));
    assert.ok(contentReads.length >= 2);
    for (const read of contentReads) assert.match(read.url, /\?recipient=alice%40example\.com$/);

    const withdrawnAt = new Date('2026-12-07T10:00:00Z');
    harness.seal.withdrawFor(record.id, ALICE.email, withdrawnAt);
    const endedAt = withdrawnAt.toISOString();
    const withdrawn = (response: { status: number; body: unknown }, what: string) =>
      assertEnded(response, 'message_withdrawn', endedAt, what);
    withdrawn(await alice.get(`/v1/message${q}`), 'GET /v1/message');
    // The draft and its file went at the first request that met the end.
    assert.deepEqual(await draftsOf(record.id), []);
    assert.equal(await exists(objectKey), false, 'the draft file is deleted from the object store');
    withdrawn(await alice.get(`/v1/message/attachments/0${q}`), 'attachment download');
    withdrawn(await alice.get(`/v1/message/reply${q}`), 'GET reply');
    withdrawn(await alice.request('PUT', `/v1/message/reply${q}`, { body: { text: 'Hi again' } }), 'PUT reply');
    withdrawn(await alice.request('POST', `/v1/message/reply${q}`, { body: { text: 'Hi again' } }), 'POST reply');
    withdrawn(await alice.get(`/v1/message/files${q}`), 'GET files');
    withdrawn(await uploadFile(alice, { filename: 'more.pdf', content: PDF, messageId: record.id }), 'POST files');
    withdrawn(await alice.request('DELETE', `/v1/message/files/${fileId}${q}`), 'DELETE file');
    withdrawn(await alice.request('PUT', `/v1/mobile${q}`, { body: { mobile: '+41795550099' } }), 'PUT mobile');
    assert.deepEqual(await draftsOf(record.id), [], 'nothing of the refused changes was kept');
    // Her other message is hers to read still; it no longer lists the withdrawn one.
    assert.equal((await alice.get(`/v1/message?messageId=${later.id}`)).status, 200);
    const listed = (await alice.get('/v1/messages')).body.messages.map((m: { id: string }) => m.id);
    assert.equal(listed.includes(record.id), false);

    // Carol reads on, and replies.
    assert.equal((await carol.get('/v1/message')).status, 200);
    assert.equal((await carol.request('PUT', '/v1/message/reply', { body: { text: 'Fine' } })).status, 200);

    // A new code for Alice is refused without one being sent; Carol still gets hers. Before sign-in nothing
    // tells of a withdrawal for one recipient.
    const stranger = harness.reader();
    const config = await stranger.get(`/v1/config?messageId=${record.id}`);
    assert.equal(config.body.ended, undefined);
    assert.deepEqual(config.body.methods, ['sms'], 'still offers sign-in');
    const sms = harness.sms.messages.length;
    withdrawn(
      await stranger.request('POST', '/v1/auth/code', {
        body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
      }),
      'POST /v1/auth/code',
    );
    assert.equal(harness.sms.messages.length, sms, 'no code sent');
    const forCarol = await stranger.request('POST', '/v1/auth/code', {
      body: { messageId: record.id, email: CAROL.email, mobile: CAROL.mobile, method: 'sms' },
    });
    assert.equal(forCarol.status, 200);
  });

  it('answers 410 message_expired the moment the end date passes, and tells it before sign-in', async () => {
    const expiresAt = new Date(Date.now() + 1500);
    const record = harness.seal.register({ raw: SAMPLE_MESSAGE, recipients: [ALICE], sender: SENDER, expiresAt });
    const alice = harness.reader();
    await signIn(harness, alice, record.id, ALICE);
    assert.equal((await alice.get('/v1/message')).status, 200);
    const early = harness.reader();
    const before = await early.get(`/v1/config?messageId=${record.id}`);
    assert.equal(before.body.ended, undefined);
    assert.deepEqual(before.body.methods, ['sms'], 'still offers sign-in');
    await sleep(expiresAt.getTime() - Date.now() + 50);

    const endedAt = expiresAt.toISOString();
    assertEnded(await alice.get('/v1/message'), 'message_expired', endedAt, 'GET /v1/message');
    assertEnded(await alice.get('/v1/message/reply'), 'message_expired', endedAt, 'GET reply');
    // Before sign-in: that it ended, when, and who sent it; nothing else of the message.
    const config = await harness.reader().get(`/v1/config?messageId=${record.id}`);
    assert.equal(config.status, 200);
    assert.deepEqual(config.body.ended, { reason: 'expired', at: endedAt });
    assert.equal(config.body.sender, SENDER);
    assert.equal(config.body.subject, undefined, 'no subject');
    assert.equal(config.body.methods, undefined);
    const sms = harness.sms.messages.length;
    assertEnded(
      await early.request('POST', '/v1/auth/code', {
        body: { messageId: record.id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
      }),
      'message_expired',
      endedAt,
      'POST /v1/auth/code',
    );
    assert.equal(harness.sms.messages.length, sms, 'no code sent');
  });

  it('deletes the drafts of a message withdrawn for everyone by the watcher, with nobody asking', async () => {
    const record = harness.seal.register({ raw: SAMPLE_MESSAGE, recipients: [ALICE], sender: SENDER });
    const alice = harness.reader();
    await signIn(harness, alice, record.id, ALICE);
    const objectKey = await draftWithFile(alice, record.id);
    harness.seal.end(record.id, 'withdrawn');
    // The service's watcher runs every 200 ms here.
    const deadline = Date.now() + 10_000;
    while ((await draftsOf(record.id)).length > 0) {
      assert.ok(Date.now() < deadline, 'the watcher deleted the draft');
      await sleep(50);
    }
    assert.equal(await exists(objectKey), false, 'its file is gone from the object store');
    const config = await harness.reader().get(`/v1/config?messageId=${record.id}`);
    assert.equal(config.body.ended.reason, 'withdrawn');
  });

  it('asks B about 500 messages at most at a time, deletes only ended ones’ drafts, then nothing', async () => {
    const ended = harness.seal.register({ raw: SAMPLE_MESSAGE, recipients: [ALICE], sender: SENDER });
    const alice = harness.reader();
    await signIn(harness, alice, ended.id, ALICE);
    const objectKey = await draftWithFile(alice, ended.id);
    // 600 drafts of messages that go on (B knows none of these ids, so none has ended).
    const others = Array.from({ length: 600 }, () => randomUUID());
    await db
      .insertInto('drafts')
      .values(
        others.map((id) => ({
          message_id: id,
          email_key: 'x@example.com',
          created_at: new Date(),
          updated_at: new Date(),
        })),
      )
      .execute();
    const seal = new SealClient({ baseUrl: harness.seal.url, serviceToken: 'test-service-token' });
    const asked: number[] = [];
    const lookup = {
      // B's answer, with the message ended here alone: the service's own watcher (every 200 ms) does not
      // see it ended and so does not race this sweep for its draft.
      async ended(ids: string[]) {
        asked.push(ids.length);
        const answer = await seal.ended(ids);
        const end = { reason: 'expired' as const, at: new Date().toISOString() };
        return ids.includes(ended.id) ? [...answer, { id: ended.id, end }] : answer;
      },
    };
    const drafts = new EndedDrafts({ db, objects: harness.auth.objects });
    const first = await drafts.sweep(lookup);
    assert.ok(asked.length >= 2 && asked.every((n) => n <= ENDED_QUERY_MAX), `asked ${asked.join(', ')}`);
    assert.deepEqual(first, { drafts: 1, files: 1 }, 'the ended message’s draft and file, nothing else');
    assert.deepEqual(await draftsOf(ended.id), []);
    assert.equal(await exists(objectKey), false);
    const left = await db.selectFrom('drafts').select('id').where('message_id', 'in', others).execute();
    assert.equal(left.length, others.length, 'the drafts of messages that go on stay');
    assert.deepEqual(await drafts.sweep(lookup), { drafts: 0, files: 0 }, 'once deleted, nothing is left to do');
    await db.deleteFrom('drafts').where('message_id', 'in', others).execute();
  });
});
