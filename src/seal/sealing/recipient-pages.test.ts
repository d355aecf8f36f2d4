import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { ServiceUnderTest } from '../../../test/support/services.ts';
import { postSeal, rawMessage, startSealOnStandIn, startStandIn, type StandIn } from '../../../test/support/seal.ts';

describe('GET /v1/recipients/{email}/sealed pages with before and beforeId: every message once', () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  const get = (path: string) =>
    fetch(`${seal.url}${path}`, { headers: { authorization: `Bearer ${seal.serviceToken}` } });

  before(async () => {
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn);
  });
  after(async () => {
    await seal?.stop();
    await standIn?.close();
  });

  it('lists messages sealed in the same millisecond across a page boundary, none skipped, none twice', async () => {
    const who = `pages-${randomUUID().slice(0, 8)}@list.example`;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const response = await postSeal(
        { url: seal.url, serviceToken: seal.serviceToken },
        rawMessage({ to: who, subject: `n${i}` }),
      );
      ids.push(((await response.json()) as { id: string }).id);
    }
    // Five of them in one millisecond, microseconds apart (sealed_at keeps them; the answer says milliseconds).
    const tied = await sql`update seal.sealed_messages
      set sealed_at = timestamptz '2026-01-02 03:04:05.678' + (interval '1 microsecond' * (ascii(id::text) % 7))
      where id = any(${ids.slice(1, 6)}::uuid[])`.execute(seal.database.db);
    assert.equal(tied.numAffectedRows, 5n);

    const seen: string[] = [];
    let query = '?limit=2';
    for (let page = 0; page < 10; page++) {
      const response = await get(`/v1/recipients/${encodeURIComponent(who)}/sealed${query}`);
      assert.equal(response.status, 200, await response.clone().text());
      const { sealed } = (await response.json()) as { sealed: Array<{ id: string; sealedAt: string }> };
      seen.push(...sealed.map((entry) => entry.id));
      if (sealed.length < 2) break;
      const last = sealed.at(-1)!;
      query = `?limit=2&before=${encodeURIComponent(last.sealedAt)}&beforeId=${last.id}`;
    }
    assert.deepEqual([...seen].sort(), [...ids].sort(), 'each message listed');
    assert.equal(new Set(seen).size, seen.length, 'none twice');
    assert.equal((await get(`/v1/recipients/${encodeURIComponent(who)}/sealed?beforeId=nope`)).status, 400);
  });
});
