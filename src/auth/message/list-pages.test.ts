import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';

const raw = (subject: string) =>
  `From: Sender <sender@example.org>\r\nTo: alice@example.com\r\nSubject: ${subject}\r\n\r\nHello.\r\n`;

describe('GET /v1/messages is paged: limit, cursor, next, except', () => {
  let harness: AuthHarness;
  let reader: Reader;
  /** Alice's 62 messages, newest first, and the one she signed in for (the oldest). */
  const hers: string[] = [];

  before(async () => {
    harness = await startAuthHarness();
    for (let i = 0; i < 62; i++) {
      hers.unshift(harness.seal.register({ raw: raw(`n${i}`), recipients: [ALICE], subject: `n${i}` }).id);
      // Between hers, ones the session does not open (another number): left out, never counted on a page.
      if (i % 10 === 0)
        harness.seal.register({ raw: raw('other'), recipients: [{ ...ALICE, mobile: '+41790000000' }] });
    }
    reader = harness.reader();
    await signInAlice(harness, reader, hers.at(-1)!);
  });
  after(async () => {
    await harness?.stop();
  });

  const page = async (query: string) => {
    const answer = await reader.get(`/v1/messages${query}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body as { messages: Array<{ id: string }>; next: string | null };
  };

  it('answers 20 by default with the next cursor, and every message once across the pages', async () => {
    const first = await page('');
    assert.equal(first.messages.length, 20);
    assert.deepEqual(
      first.messages.map((m) => m.id),
      hers.slice(0, 20),
    );
    const seen = first.messages.map((m) => m.id);
    let next = first.next;
    for (let pages = 1; next !== null && pages < 10; pages++) {
      const more = await page(`?cursor=${encodeURIComponent(next)}`);
      seen.push(...more.messages.map((m) => m.id));
      next = more.next;
    }
    assert.equal(next, null, 'the last page says there is no next');
    assert.deepEqual(seen, hers, 'all 62, newest first, once each');
  });

  it('takes a page size up to 100 and leaves out the message named in except', async () => {
    const all = await page(`?limit=100&except=${hers[3]}`);
    assert.equal(all.messages.length, 61);
    assert.equal(all.next, null);
    assert.ok(!all.messages.some((m) => m.id === hers[3]));
    const two = await page(`?limit=2&except=${hers[0]}`);
    assert.deepEqual(
      two.messages.map((m) => m.id),
      hers.slice(1, 3),
    );
    assert.notEqual(two.next, null);
  });

  it('refuses a page size over 100, or a cursor that is not one, with validation_failed', async () => {
    assertError(await reader.get('/v1/messages?limit=101'), 400, 'validation_failed');
    assertError(await reader.get('/v1/messages?limit=0'), 400, 'validation_failed');
    assertError(await reader.get('/v1/messages?cursor=yesterday'), 400, 'validation_failed');
  });
});
