import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import {
  postSeal,
  rawMessage,
  standInCluster,
  startSealWithClusters,
  startStandIn,
  type StandIn,
} from '../../../test/support/seal.ts';

/**
 * Content that was added and pinned but that no sealed record points at is unpinned (best effort):
 * the loser of two requests racing for one envelope, and a seal whose record could not be stored.
 */

const pinned = (standIn: StandIn, method: string) =>
  standIn.requests
    .filter((req) => req.listener === 'rest' && req.method === method && req.path.startsWith('/pins/'))
    .map((req) => req.path.slice('/pins/'.length));

async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(check(), what);
}

describe('orphaned content is unpinned', () => {
  const stops: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  async function setUp() {
    const a = await startStandIn();
    stops.push(() => a.close());
    const b = await startStandIn();
    stops.push(() => b.close());
    const seal = await startSealWithClusters([standInCluster(a), standInCluster(b)], {
      IPFS_PROXY_PORT: String(a.proxyPort),
    });
    stops.push(() => seal.stop());
    return { a, b, seal };
  }

  it('unpins, on every cluster, the content of the request that lost a race for one envelope', async () => {
    const { a, b, seal } = await setUp();
    const envelopeId = randomUUID();
    // Larger than one upload batch (256 KiB), so that /add starts while the rest of the body is held.
    const raw = rawMessage({ body: 'a line of the body\r\n'.repeat(20_000) });
    // The first request is held mid-body, inside /add, while the second one seals the envelope.
    let release!: () => void;
    const slow = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(raw.subarray(0, raw.length - 10));
        release = () => {
          controller.enqueue(raw.subarray(raw.length - 10));
          controller.close();
        };
      },
    });
    const losing = postSeal(seal, slow, { envelopeId });
    await eventually(() => a.requests.some((req) => req.path === '/add'), 'the first request reached /add');

    const winning = await postSeal(seal, raw, { envelopeId });
    assert.equal(winning.status, 201);
    const winner = await winning.json();
    release();
    const lost = await losing;
    assert.equal(lost.status, 200, 'the loser answers the record that stands');
    assert.equal((await lost.json()).id, winner.id);

    const loserCid = pinned(a, 'POST').find((cid) => cid !== winner.cid);
    assert.ok(loserCid, 'the loser had added and pinned its own ciphertext');
    for (const standIn of [a, b]) {
      await eventually(() => !standIn.pins().has(loserCid), `the losing CID is unpinned on ${standIn.url}`);
      assert.deepEqual(pinned(standIn, 'DELETE'), [loserCid], 'DELETE /pins for the loser only');
      assert.ok(standIn.pins().has(winner.cid), "the record's content stays pinned");
    }
    assert.equal(
      (
        await fetch(`${seal.url}/v1/sealed/${winner.id}/content`, {
          headers: { authorization: `Bearer ${seal.serviceToken}` },
        })
      ).status,
      200,
    );
  });

  it('unpins the content when the record cannot be stored, and logs a cluster where the unpin fails', async () => {
    const { a, b, seal } = await setUp();
    await sql`alter table seal.sealed_messages
      add constraint refuse_for_test check (subject <> 'refused by the database')`.execute(seal.database.db);
    b.setFailPins(true);

    const response = await postSeal(seal, rawMessage({ subject: 'refused by the database' }));
    assert.equal(response.status, 500);
    const [cid] = pinned(a, 'POST');
    assert.ok(cid);
    await eventually(() => !a.pins().has(cid), 'the content is unpinned on the cluster that held it');
    assert.deepEqual(pinned(a, 'DELETE'), [cid]);
    await eventually(() => pinned(b, 'DELETE').length === 1, 'the other cluster was asked too');
    await eventually(
      () =>
        seal.logs.some(
          (line) =>
            line.msg === 'unpinning orphaned content failed on this cluster; it stays pinned there' &&
            line.cluster === `127.0.0.1:${b.port}`,
        ),
      'the failed unpin is logged',
    );
    const rows = await seal.database.db.withSchema('seal').selectFrom('sealed_messages').select('id').execute();
    assert.equal(rows.length, 0);
  });
});
