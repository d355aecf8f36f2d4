import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Kysely } from 'kysely';
import type { AuthTables } from '../tables.ts';
import { assertError } from '../../../test/support/auth-assert.ts';
import { signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader, ReaderResponse } from '../../../test/support/auth-reader.ts';
import { generatedBuffer, uploadFile } from '../../../test/support/multipart-upload.ts';

const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), generatedBuffer(20_000), Buffer.from('\n%%EOF\n')]);

/**
 * A stand-in exchange engine that accepts every reply (202 with an envelope id) after `delayMs`, and
 * keeps what it was given: whatever reaches it is what left.
 */
async function startCapturingExchange(delayMs: number) {
  const received: string[] = [];
  let next = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      // The engine's JSON message: the reply itself is base64 in `raw`.
      const message = JSON.parse(Buffer.concat(chunks).toString()) as { raw: string };
      received.push(Buffer.from(message.raw, 'base64').toString('latin1'));
      setTimeout(
        () =>
          response
            .writeHead(202, { 'content-type': 'application/json' })
            .end(JSON.stringify({ id: `envelope-${++next}` })),
        delayMs,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const ifMatch = (version: number) => ({ 'if-match': `"${version}"` });
const etagVersion = (headers: Headers | Record<string, unknown>) => {
  const value = headers instanceof Headers ? headers.get('etag') : headers.etag;
  const match = /^"(\d+)"$/.exec(String(value));
  assert.ok(match, `an ETag with the version: ${String(value)}`);
  return Number(match[1]);
};

describe('reply draft versions: every change raises it, an outdated one is a draft_conflict', () => {
  let exchange: Awaited<ReturnType<typeof startCapturingExchange>>;
  let harness: AuthHarness;
  let db: Kysely<AuthTables>;
  let messageId: string;
  let alice: Reader;

  const draft = async () => {
    const got = await alice.get('/v1/message/reply');
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(etagVersion(got.headers), got.body.version, 'the ETag and the body say the same version');
    return got.body as { text: string; version: number; files: Array<{ id: string; name: string }> };
  };
  const save = (text: string, version?: number) =>
    alice.request('PUT', '/v1/message/reply', {
      body: { text },
      ...(version !== undefined ? { headers: ifMatch(version) } : {}),
    });
  const send = (text: string, version: number) =>
    alice.request('POST', '/v1/message/reply', { body: { text }, headers: ifMatch(version) });
  const upload = (filename: string, version: number) =>
    uploadFile(alice, { filename, content: PDF, headers: ifMatch(version) });
  const assertConflict = (response: ReaderResponse) => assertError(response, 409, 'draft_conflict');
  const objectCount = async () => {
    let count = 0;
    for await (const _ of harness.auth.objects.list('auth/')) count++;
    return count;
  };

  before(async () => {
    exchange = await startCapturingExchange(300);
    harness = await startAuthHarness({
      env: {
        EXCHANGE_URL: exchange.url,
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
        REPLY_FROM: 'Example Org <replies@example.org>',
      },
    });
    db = harness.auth.database.db.withSchema('auth') as Kysely<AuthTables>;
    messageId = harness.sealSample().id;
    alice = harness.reader();
    await signInAlice(harness, alice, messageId);
    await alice.get('/v1/message/files'); // the CSRF token
  });
  after(async () => {
    await harness?.stop();
    await exchange?.close();
  });
  beforeEach(() => {
    exchange.received.length = 0;
  });

  it('raises the version with every change: text saved, file added, file removed, sent', async () => {
    const start = await draft();
    assert.equal(start.version, 0, 'no change yet');

    const saved = await save('first words', start.version);
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.equal(saved.body.version, 1);
    assert.equal(etagVersion(saved.headers), 1);

    const uploaded = await upload('a.pdf', 1);
    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    assert.equal(etagVersion(uploaded.headers), 2);
    assert.equal((await draft()).version, 2);

    const removed = await alice.request('DELETE', `/v1/message/files/${uploaded.body.id}`, { headers: ifMatch(2) });
    assert.equal(removed.status, 204);
    assert.equal(etagVersion(removed.headers), 3);

    // Without If-Match a change is made whatever the version, and still raises it.
    assert.equal((await save('more words')).body.version, 4);

    const sent = await send('the reply', 4);
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const after = await draft();
    assert.ok(after.version > 4, `sending raised the version (${after.version})`);
    assert.equal(etagVersion(sent.headers), after.version);
    assert.equal(after.text, '', 'the sent draft is gone');
    assert.equal(exchange.received.length, 1);
  });

  it('refuses save, upload, removal or send on an outdated version: 409 draft_conflict, no change', async () => {
    const start = await draft();
    const saved = await save('kept text', start.version);
    const withFile = await upload('kept.pdf', saved.body.version);
    assert.equal(withFile.status, 201, JSON.stringify(withFile.body));
    const current = await draft();
    const stale = start.version;
    const objectsBefore = await objectCount();
    const rowsBefore = await db.selectFrom('draft_files').select(['id', 'state']).execute();

    assertConflict(await save('overwritten?', stale));
    const refusedUpload = await upload('late.pdf', stale);
    assertError(
      { status: refusedUpload.status, body: refusedUpload.body, headers: new Headers(), setCookie: undefined },
      409,
      'draft_conflict',
    );
    assertConflict(await alice.request('DELETE', `/v1/message/files/${withFile.body.id}`, { headers: ifMatch(stale) }));
    assertConflict(await send('sent?', stale));
    // A version from the future is as wrong as one from the past.
    assertConflict(await save('overwritten?', current.version + 1));

    const after = await draft();
    assert.equal(after.version, current.version, 'the version did not move');
    assert.equal(after.text, 'kept text');
    assert.deepEqual(
      after.files.map((file) => file.name),
      ['kept.pdf'],
    );
    assert.equal(await objectCount(), objectsBefore, 'no object added or removed');
    assert.deepEqual(
      await db.selectFrom('draft_files').select(['id', 'state']).execute(),
      rowsBefore,
      'no file row added or removed',
    );
    assert.equal(exchange.received.length, 0, 'nothing reached the exchange engine');
    assertError(
      await alice.request('PUT', '/v1/message/reply', { body: { text: 'x' }, headers: { 'if-match': 'yesterday' } }),
      400,
      'validation_failed',
    );

    // With the current version the same changes pass.
    const removed = await alice.request('DELETE', `/v1/message/files/${withFile.body.id}`, {
      headers: ifMatch(current.version),
    });
    assert.equal(removed.status, 204);
    assert.equal((await save('', etagVersion(removed.headers))).status, 200);
  });

  it('refuses an upload whose draft changed while the file was on its way, keeping nothing of it', async () => {
    const start = await draft();
    const objectsBefore = await objectCount();
    // The upload is begun against start.version; a save from another window lands while its bytes flow.
    async function* slowFile() {
      yield PDF.subarray(0, 10_000);
      const other = await save('from the other window', start.version);
      assert.equal(other.status, 200, JSON.stringify(other.body));
      yield PDF.subarray(10_000);
    }
    const refused = await uploadFile(alice, {
      filename: 'raced.pdf',
      content: slowFile(),
      size: PDF.length,
      headers: ifMatch(start.version),
    });
    assertError(
      { status: refused.status, body: refused.body, headers: new Headers(), setCookie: undefined },
      409,
      'draft_conflict',
    );
    const after = await draft();
    assert.equal(after.version, start.version + 1, 'only the save raised it');
    assert.deepEqual(after.files, []);
    assert.equal(await objectCount(), objectsBefore, 'the object was deleted');
    assert.equal((await db.selectFrom('draft_files').select('id').execute()).length, 0, 'the row was deleted');
  });

  it('lets exactly one of two concurrent sends with the same version reach the exchange engine', async () => {
    const start = await draft();
    const withFile = await upload('both.pdf', start.version);
    const version = etagVersion(withFile.headers);
    const answers = await Promise.all([send('send one', version), send('send two', version)]);
    const statuses = answers.map((answer) => answer.status).sort();
    assert.deepEqual(statuses, [202, 409], JSON.stringify(answers.map((answer) => answer.body)));
    // A draft_conflict when it met the other's first save, reply_already_sent when it came after the send.
    const loser = answers.find((answer) => answer.status === 409)!;
    assert.ok(['draft_conflict', 'reply_already_sent'].includes(loser.body.errorCode), JSON.stringify(loser.body));
    assert.equal(exchange.received.length, 1, 'exactly one reply left');
    assert.match(exchange.received[0]!, /filename=both\.pdf/, 'with the file the window showed');
    assert.match(exchange.received[0]!, /send (one|two)/);
  });

  it('refuses a second send from a window still showing a reply already sent: no second reply leaves', async () => {
    const start = await draft();
    const withFile = await upload('shown.pdf', (await save('sent from B', start.version)).body.version);
    const shown = etagVersion(withFile.headers);
    // Window B sends; window A still shows the draft with its file, at the same version.
    assert.equal((await send('sent from B', shown)).status, 202);
    assertError(await send('sent from B', shown), 409, 'reply_already_sent');
    assert.equal(exchange.received.length, 1, 'one reply, not two');
    // A reloads (GET) and gets the empty draft at the new version: nothing of the sent draft is left.
    const reloaded = await draft();
    assert.deepEqual(reloaded.files, []);
    assert.equal(reloaded.text, '');
  });

  it('gives the new version on a refusal after saving the text, so the page can send again cleanly', async () => {
    const start = await draft();
    const refused = await alice.request('POST', '/v1/message/reply', {
      body: { text: 'with a bad copy', bcc: 'not an address' },
      headers: ifMatch(start.version),
    });
    assertError(refused, 400, 'invalid_bcc_address');
    const version = etagVersion(refused.headers);
    assert.equal((await draft()).version, version);
    const sent = await send('with a bad copy', version);
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    assert.equal(exchange.received.length, 1);
  });
});
