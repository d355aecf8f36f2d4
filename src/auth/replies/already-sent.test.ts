import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { assertError } from '../../../test/support/auth-assert.ts';
import { signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { uploadFile } from '../../../test/support/multipart-upload.ts';

/** An exchange engine that takes every reply. */
async function startAcceptingExchange() {
  let next = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () =>
      response.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `env-${++next}` })),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent: () => next,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const ifMatch = (version: number) => ({ 'if-match': `"${version}"` });

describe('a change made against a reply that another window sent: reply_already_sent with its time', () => {
  let exchange: Awaited<ReturnType<typeof startAcceptingExchange>>;
  let harness: AuthHarness;
  let alice: Reader;

  const version = async () => (await alice.get('/v1/message/reply')).body.version as number;
  const save = (text: string, at: number) =>
    alice.request('PUT', '/v1/message/reply', { body: { text }, headers: ifMatch(at) });
  const send = (text: string, at: number) =>
    alice.request('POST', '/v1/message/reply', { body: { text }, headers: ifMatch(at) });

  before(async () => {
    exchange = await startAcceptingExchange();
    harness = await startAuthHarness({ env: { EXCHANGE_URL: exchange.url, REPLY_FROM: 'Org <replies@example.org>' } });
    alice = harness.reader();
    await signInAlice(harness, alice, harness.sealSample().id);
    await alice.get('/v1/message/files'); // the CSRF token
  });
  after(async () => {
    await harness?.stop();
    await exchange?.close();
  });

  it('says no last send before the first one', async () => {
    assert.equal((await alice.get('/v1/message/reply')).body.lastSentAt, null);
  });

  it('answers every change of the window left behind with reply_already_sent and the time of the send', async () => {
    const shown = (await save('typed in both windows', await version())).body.version as number;
    const sendBegan = harness.clock.now();
    assert.equal((await send('sent from window one', shown)).status, 202);
    const sendEnded = harness.clock.now();
    const sentAt = (await alice.request('PUT', '/v1/message/reply', { body: { text: 'x' }, headers: ifMatch(shown) }))
      .body.sentAt as string;
    assert.ok(
      Date.parse(sentAt) >= sendBegan && Date.parse(sentAt) <= sendEnded,
      `${sentAt} is the time of the send (between ${sendBegan} and ${sendEnded})`,
    );

    for (const answer of [
      await save('window two goes on typing', shown),
      await send('window two sends', shown),
      await alice.request('DELETE', '/v1/message/files/00000000-0000-4000-8000-000000000000', {
        headers: ifMatch(shown),
      }),
    ]) {
      assertError(answer, 409, 'reply_already_sent');
      assert.equal(answer.body.sentAt, sentAt, 'the time the reply went');
    }
    const upload = await uploadFile(alice, {
      filename: 'late.txt',
      content: Buffer.from('late'),
      headers: ifMatch(shown),
    });
    assert.equal(upload.status, 409);
    assert.equal(upload.body.errorCode, 'reply_already_sent');
    assert.equal(upload.body.sentAt, sentAt);
    assert.equal(exchange.sent(), 1, 'one reply left');
    const after = (await alice.get('/v1/message/reply')).body;
    assert.equal(after.lastSentAt, sentAt, 'the draft says when the last reply went');
    assert.equal(after.text, '', 'nothing of window two was saved into a new draft');
    assert.deepEqual(after.files, []);
  });

  it('answers draft_conflict, not reply_already_sent, for a new draft changed elsewhere after the send', async () => {
    const afterSend = await version();
    const saved = await save('a second reply', afterSend);
    assert.equal(saved.status, 200);
    assertError(await save('the other window of the second reply', afterSend), 409, 'draft_conflict');
  });
});
