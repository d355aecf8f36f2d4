import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { postSeal, rawMessage, startSealOnStandIn, startStandIn, type StandIn } from '../../../test/support/seal.ts';
import type { ServiceUnderTest } from '../../../test/support/services.ts';

/**
 * The sender's side of the seal service (docs/specification.md#seal-endpoints-for-the-senders-side): a sender's
 * messages, newest first, searchable and paged, with per-recipient times and counts from the trail; withdrawal
 * and end dates; the trail; and nothing of another sender's messages.
 */

const HOUR = 60 * 60 * 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const call = (seal: ServiceUnderTest, path: string, init: { method?: string; body?: unknown; accept?: string } = {}) =>
  fetch(`${seal.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${seal.serviceToken}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.accept ? { accept: init.accept } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });

async function sealOne(seal: ServiceUnderTest, parts: { from: string; to: string; subject: string }) {
  const response = await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, rawMessage(parts));
  assert.equal(response.status, 201, await response.clone().text());
  return (await response.json()) as { id: string; expiresAt?: string };
}

const report = (seal: ServiceUnderTest, id: string, event: string, recipient: string) =>
  call(seal, `/v1/sealed/${id}/events`, { method: 'POST', body: { event, recipient } });

interface Entry {
  id: string;
  subject: string;
  sealedAt: string;
  expiresAt?: string;
  end?: { reason: string; at: string; note?: string };
  recipients: Array<Record<string, unknown> & { email: string }>;
}

describe("the sender's side", () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  // A sender of their own per run: the list is the sender's whole history.
  const sender = `alice-${randomUUID().slice(0, 8)}@sender.example`;
  const base = `/v1/senders/${encodeURIComponent(sender)}/sealed`;

  before(async () => {
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn, { SEAL_END_INTERVAL: '1h', SEAL_MAX_EXPIRY: '30d' });
  });
  after(async () => {
    await seal?.stop();
    await standIn?.close();
  });

  it('lists the sender’s messages newest first, searches recipient and subject, and pages with before', async () => {
    const ids: string[] = [];
    for (const [to, subject] of [
      ['bob@rcpt.example', 'Quarterly report'],
      ['carol@other.example', 'Invoice 42'],
      ['dave@rcpt.example', 'Contract draft'],
    ] as const) {
      ids.push((await sealOne(seal, { from: sender, to, subject })).id);
      await sleep(5);
    }
    await sealOne(seal, { from: 'mallory@sender.example', to: 'bob@rcpt.example', subject: 'Quarterly report' });

    const list = async (query = '') => {
      const response = await call(seal, `${base}${query}`);
      assert.equal(response.status, 200, await response.clone().text());
      return ((await response.json()) as { sealed: Entry[] }).sealed;
    };
    assert.deepEqual(
      (await list()).map((entry) => entry.id),
      [...ids].reverse(),
    );
    // {sender} normalised and case-insensitive.
    const shouted = await call(seal, `/v1/senders/${encodeURIComponent(` ${sender.toUpperCase()} `)}/sealed`);
    assert.deepEqual(
      ((await shouted.json()) as { sealed: Entry[] }).sealed.map((entry) => entry.id),
      [...ids].reverse(),
    );
    assert.deepEqual(
      (await list('?q=OTHER.example')).map((entry) => entry.subject),
      ['Invoice 42'],
    );
    assert.deepEqual(
      (await list('?q=quarterly')).map((entry) => entry.id),
      [ids[0]],
    );
    assert.deepEqual(await list('?q=%25'), [], 'a % is a character, not a wildcard');
    const page = await list('?limit=2');
    assert.deepEqual(
      page.map((entry) => entry.id),
      [ids[2], ids[1]],
    );
    assert.deepEqual(
      (await list(`?limit=2&before=${encodeURIComponent(page[1]!.sealedAt)}`)).map((entry) => entry.id),
      [ids[0]],
    );
    assert.equal((await call(seal, `${base}?limit=0`)).status, 400);
    assert.equal((await call(seal, `${base}?limit=201`)).status, 400);
  });

  it('counts per recipient from the trail: notified, opened, failed sign-ins, downloads, replies', async () => {
    const { id } = await sealOne(seal, { from: sender, to: 'bob@rcpt.example, carol@rcpt.example', subject: 'Counts' });
    for (const event of ['notified', 'sign_in_failed', 'sign_in_failed', 'sign_in_succeeded', 'opened']) {
      assert.equal((await report(seal, id, event, 'bob@rcpt.example')).status, 201);
    }
    await sleep(5);
    for (const event of ['opened', 'attachment_downloaded', 'attachment_downloaded', 'reply_sent']) {
      assert.equal((await report(seal, id, event, 'BOB@rcpt.example')).status, 201);
    }
    assert.equal((await report(seal, id, 'notified', 'carol@rcpt.example')).status, 201);

    const entry = (await (await call(seal, `${base}/${id}`)).json()) as Entry;
    const [bob, carol] = entry.recipients;
    assert.equal(bob!.email, 'bob@rcpt.example');
    assert.equal(bob!.failedSignIns, 2);
    assert.equal(bob!.downloads, 2);
    assert.equal(bob!.replies, 1);
    assert.ok(typeof bob!.notifiedAt === 'string');
    assert.ok(typeof bob!.firstOpenedAt === 'string' && typeof bob!.lastOpenedAt === 'string');
    assert.ok(Date.parse(bob!.lastOpenedAt as string) > Date.parse(bob!.firstOpenedAt as string));
    assert.deepEqual(Object.keys(carol!).sort(), [
      'downloads',
      'email',
      'failedSignIns',
      'method',
      'notifiedAt',
      'replies',
    ]);
    assert.equal(carol!.failedSignIns, 0);

    const listed = ((await (await call(seal, `${base}?q=Counts`)).json()) as { sealed: Entry[] }).sealed;
    assert.deepEqual(listed, [entry], 'the list says what the entry says');
  });

  it('withdraws for one recipient and for everyone, with the trail entries', async () => {
    const { id } = await sealOne(seal, { from: sender, to: 'bob@rcpt.example, carol@rcpt.example', subject: 'W' });
    const withdraw = (body: unknown) => call(seal, `${base}/${id}/withdraw`, { method: 'POST', body });
    assert.equal((await withdraw({ reason: 'x', recipient: 'eve@rcpt.example' })).status, 404);
    const one = await withdraw({ reason: 'wrong Carol', recipient: 'Carol@RCPT.example' });
    assert.equal(one.status, 200, await one.clone().text());
    const afterOne = (await one.json()) as Entry;
    assert.ok(afterOne.recipients[1]!.withdrawnAt);
    assert.equal(afterOne.recipients[0]!.withdrawnAt, undefined);
    assert.equal(afterOne.end, undefined);
    assert.equal((await call(seal, `/v1/sealed/${id}/content?recipient=carol%40rcpt.example`)).status, 410);

    const all = await withdraw({ reason: 'all wrong' });
    assert.equal(all.status, 200);
    const ended = (await all.json()) as Entry;
    assert.equal(ended.end?.reason, 'withdrawn');
    assert.equal(ended.end?.note, 'all wrong');
    assert.equal((await call(seal, `/v1/sealed/${id}/content`)).status, 410);
    assert.deepEqual(await (await withdraw({ reason: 'again' })).json(), ended, 'answered unchanged');

    const { trail } = (await (await call(seal, `${base}/${id}/trail`)).json()) as {
      trail: Array<{ event: string; recipient?: string; detail?: unknown }>;
    };
    assert.deepEqual(
      trail.map(({ event, recipient, detail }) => ({ event, recipient, detail })),
      [
        { event: 'sealed', recipient: undefined, detail: undefined },
        { event: 'withdrawn', recipient: 'carol@rcpt.example', detail: { scope: 'recipient', reason: 'wrong Carol' } },
        { event: 'withdrawn', recipient: undefined, detail: { scope: 'everyone', reason: 'all wrong' } },
      ],
    );
    const csv = await call(seal, `${base}/${id}/trail`, { accept: 'text/csv' });
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    assert.equal((await csv.text()).split('\r\n').length, 5, 'header, three entries, the final line break');
  });

  it('changes the end date within its bounds, writes end_date_changed, refuses after the end with 410', async () => {
    const { id } = await sealOne(seal, { from: sender, to: 'bob@rcpt.example', subject: 'E' });
    const entry = (await (await call(seal, `${base}/${id}`)).json()) as Entry;
    const sealedAt = Date.parse(entry.sealedAt);
    const expiry = (at: number | string) =>
      call(seal, `${base}/${id}/expiry`, {
        method: 'PUT',
        body: { expiresAt: typeof at === 'number' ? new Date(at).toISOString() : at },
      });

    const later = sealedAt + 29 * 24 * HOUR;
    const changed = await expiry(later);
    assert.equal(changed.status, 200, await changed.clone().text());
    assert.equal(((await changed.json()) as Entry).expiresAt, new Date(later).toISOString());
    assert.equal((await expiry(sealedAt + 30 * 24 * HOUR + 1000)).status, 400, 'past SEAL_MAX_EXPIRY');
    assert.equal((await expiry(Date.now() - 60_000)).status, 400, 'in the past: withdraw instead');
    assert.equal((await expiry('tomorrow')).status, 400);
    const soon = Date.now() + 1500;
    assert.equal((await expiry(soon)).status, 200, 'earlier');

    await sleep(soon - Date.now() + 100);
    const gone = await expiry(Date.now() + HOUR);
    assert.equal(gone.status, 410);
    assert.equal(((await gone.json()) as { errorCode: string }).errorCode, 'message_expired');
    await seal.service.workers!.ender!.runOnce();
    assert.equal((await expiry(Date.now() + HOUR)).status, 410);

    const { trail } = (await (await call(seal, `${base}/${id}/trail`)).json()) as {
      trail: Array<{ event: string; at: string; detail?: { expiresAt?: string } }>;
    };
    assert.deepEqual(
      trail.map((entry) => [entry.event, entry.detail?.expiresAt]),
      [
        ['sealed', undefined],
        ['end_date_changed', new Date(later).toISOString()],
        ['end_date_changed', new Date(soon).toISOString()],
        ['expired', undefined],
      ],
    );
    assert.equal(trail[3]!.at, new Date(soon).toISOString(), 'expired as of its end date');
  });

  it('answers a second sender 404 on every route of a message it did not send, as for a missing one', async () => {
    const { id } = await sealOne(seal, { from: sender, to: 'bob@rcpt.example', subject: 'Mine' });
    const other = '/v1/senders/mallory%40sender.example/sealed';
    for (const base of [other, `/v1/senders/${encodeURIComponent(sender)}/sealed`]) {
      const target = base === other ? id : randomUUID();
      const answers = [
        await call(seal, `${base}/${target}`),
        await call(seal, `${base}/${target}/trail`),
        await call(seal, `${base}/${target}/trail`, { accept: 'text/csv' }),
        await call(seal, `${base}/${target}/withdraw`, { method: 'POST', body: { reason: 'mine now' } }),
        await call(seal, `${base}/${target}/withdraw`, {
          method: 'POST',
          body: { reason: 'mine now', recipient: 'bob@rcpt.example' },
        }),
        await call(seal, `${base}/${target}/expiry`, {
          method: 'PUT',
          body: { expiresAt: new Date(Date.now() + HOUR).toISOString() },
        }),
      ];
      const bodies = await Promise.all(answers.map(async (answer) => [answer.status, (await answer.json()).errorCode]));
      assert.deepEqual(bodies, Array(6).fill([404, 'not_found']), base);
    }
    const listed = ((await (await call(seal, `${other}?q=Mine`)).json()) as { sealed: Entry[] }).sealed;
    assert.ok(!listed.some((entry) => entry.id === id));
    const untouched = (await (
      await call(seal, `/v1/senders/${encodeURIComponent(sender)}/sealed/${id}`)
    ).json()) as Entry;
    assert.equal(untouched.end, undefined);
    assert.equal(untouched.recipients[0]!.withdrawnAt, undefined);
    assert.equal((await call(seal, `/v1/sealed/${id}/content`)).status, 200);
  });
});
