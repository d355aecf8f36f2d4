import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { postSeal, rawMessage, startSealOnStandIn, startStandIn, type StandIn } from '../../../test/support/seal.ts';
import type { ServiceUnderTest } from '../../../test/support/services.ts';

/**
 * The trail (docs/specification.md#trail): the events the other services report, in order, with `first`; the
 * seal service's own; the operator's read as JSON and CSV; append-only in the database; the retention.
 */

const call = (seal: ServiceUnderTest, path: string, init: { method?: string; body?: unknown; token?: string } = {}) =>
  fetch(`${seal.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${init.token ?? seal.serviceToken}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });

const report = (seal: ServiceUnderTest, id: string, body: unknown, token?: string) =>
  call(seal, `/v1/sealed/${id}/events`, { method: 'POST', body, ...(token ? { token } : {}) });

async function sealFor(seal: ServiceUnderTest, to: string) {
  const response = await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, rawMessage({ to }));
  assert.equal(response.status, 201, await response.clone().text());
  return (await response.json()) as { id: string };
}

async function first(seal: ServiceUnderTest, id: string, body: unknown): Promise<boolean> {
  const response = await report(seal, id, body);
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as { first: boolean }).first;
}

describe('the trail', () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;

  before(async () => {
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn, { SEAL_END_INTERVAL: '1h', SEAL_TRAIL_RETENTION: '1h' });
  });
  after(async () => {
    await seal?.stop();
    await standIn?.close();
  });

  it('records reported events in order, with first right per event and recipient', async () => {
    const { id } = await sealFor(seal, 'bob@rcpt.example, carol@rcpt.example');
    assert.equal(await first(seal, id, { event: 'notified', recipient: 'bob@rcpt.example' }), true);
    assert.equal(await first(seal, id, { event: 'notified', recipient: 'carol@rcpt.example' }), true);
    assert.equal(
      await first(seal, id, {
        event: 'code_sent',
        recipient: ' Bob@RCPT.example ',
        client: '203.0.113.0',
        detail: { method: 'email', destination: 'b***@rcpt.example' },
      }),
      true,
    );
    assert.equal(await first(seal, id, { event: 'sign_in_failed', recipient: 'bob@rcpt.example' }), true);
    assert.equal(await first(seal, id, { event: 'sign_in_failed', recipient: 'BOB@rcpt.example' }), false);
    assert.equal(await first(seal, id, { event: 'opened', recipient: 'bob@rcpt.example' }), true);
    assert.equal(await first(seal, id, { event: 'opened', recipient: 'bob@rcpt.example' }), false);
    assert.equal(await first(seal, id, { event: 'opened', recipient: 'carol@rcpt.example' }), true);

    const answer = await call(seal, `/v1/admin/sealed/${id}/trail`, { token: seal.adminToken });
    assert.equal(answer.status, 200);
    const { id: trailId, trail } = (await answer.json()) as { id: string; trail: Array<Record<string, unknown>> };
    assert.equal(trailId, id);
    assert.deepEqual(
      trail.map((entry) => [entry.event, entry.recipient]),
      [
        ['sealed', undefined],
        ['notified', 'bob@rcpt.example'],
        ['notified', 'carol@rcpt.example'],
        ['code_sent', 'Bob@rcpt.example'],
        ['sign_in_failed', 'bob@rcpt.example'],
        ['sign_in_failed', 'BOB@rcpt.example'],
        ['opened', 'bob@rcpt.example'],
        ['opened', 'bob@rcpt.example'],
        ['opened', 'carol@rcpt.example'],
      ],
    );
    assert.equal(trail[3]!.client, '203.0.113.0');
    assert.deepEqual(trail[3]!.detail, { method: 'email', destination: 'b***@rcpt.example' });
    assert.ok(trail.every((entry) => typeof entry.at === 'string' && !Number.isNaN(Date.parse(entry.at as string))));
  });

  it('decides first once when the same event is reported at the same time', async () => {
    const { id } = await sealFor(seal, 'bob@rcpt.example');
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => first(seal, id, { event: 'opened', recipient: 'bob@rcpt.example' })),
    );
    assert.equal(answers.filter(Boolean).length, 1);
  });

  it('answers 404 for an unknown message, 400 for a bad event or recipient, 401 without its token', async () => {
    const { id } = await sealFor(seal, 'bob@rcpt.example');
    assert.equal((await report(seal, randomUUID(), { event: 'opened', recipient: 'bob@rcpt.example' })).status, 404);
    assert.equal((await report(seal, id, { event: 'sealed' })).status, 400, 'the seal service writes its own');
    assert.equal((await report(seal, id, { event: 'withdrawn' })).status, 400);
    assert.equal((await report(seal, id, { event: 'opened', recipient: 'not an address' })).status, 400);
    assert.equal((await report(seal, id, { event: 'opened', detail: { secret: 1 } })).status, 400);
    assert.equal((await report(seal, id, { event: 'opened' }, seal.adminToken)).status, 401);
    assert.equal((await call(seal, `/v1/admin/sealed/${randomUUID()}/trail`, { token: seal.adminToken })).status, 404);
    assert.equal(
      (await call(seal, `/v1/admin/sealed/${id}/trail`)).status,
      401,
      'the admin token, not the service one',
    );
  });

  it('writes withdrawn with its scope and reason, and gives the operator CSV with formulas defused', async () => {
    const { id } = await sealFor(seal, 'bob@rcpt.example, "=cmd"@rcpt.example');
    await first(seal, id, {
      event: 'attachment_downloaded',
      recipient: 'bob@rcpt.example',
      detail: { attachment: '=HYPERLINK("x"), "quoted".pdf' },
    });
    const withdraw = (body: unknown) =>
      call(seal, `/v1/admin/sealed/${id}/withdraw`, { method: 'POST', body, token: seal.adminToken });
    assert.equal((await withdraw({ reason: 'wrong Bob', recipient: 'bob@rcpt.example' })).status, 200);
    assert.equal((await withdraw({ reason: '-all of them' })).status, 200);

    const csv = await fetch(`${seal.url}/v1/admin/sealed/${id}/trail`, {
      headers: { authorization: `Bearer ${seal.adminToken}`, accept: 'text/csv' },
    });
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = (await csv.text()).split('\r\n');
    assert.equal(lines[0], 'at,event,recipient,client,detail');
    assert.match(lines[1]!, /^\d{4}-\d\d-\d\dT[^,]+Z,sealed,,,$/);
    assert.match(
      lines[2]!,
      /,attachment_downloaded,bob@rcpt\.example,,"{""attachment"":""=HYPERLINK\(\\""x\\""\), \\""quoted\\"".pdf""}"$/,
    );
    assert.match(lines[3]!, /,withdrawn,bob@rcpt\.example,,"{""scope"":""recipient"",""reason"":""wrong Bob""}"$/);
    assert.match(lines[4]!, /,withdrawn,,,"{""scope"":""everyone"",""reason"":""-all of them""}"$/);
    assert.equal(lines[5], '');
    assert.equal(lines.length, 6);

    const json = (await (await call(seal, `/v1/admin/sealed/${id}/trail`, { token: seal.adminToken })).json()) as {
      trail: Array<{ at: string; event: string; recipient?: string; detail?: unknown }>;
    };
    assert.deepEqual(json.trail.at(-1), {
      at: json.trail.at(-1)!.at,
      event: 'withdrawn',
      detail: { scope: 'everyone', reason: '-all of them' },
    });
  });

  it('prefixes a CSV cell that starts with = + - @ with a quote mark', async () => {
    const { id } = await sealFor(seal, 'bob@rcpt.example');
    await first(seal, id, { event: 'opened', recipient: '=1+1@rcpt.example', client: '@203.0.113.0' });
    await first(seal, id, { event: 'opened', recipient: '+bob@rcpt.example', client: '-1' });
    const csv = await (
      await fetch(`${seal.url}/v1/admin/sealed/${id}/trail`, {
        headers: { authorization: `Bearer ${seal.adminToken}`, accept: 'text/csv' },
      })
    ).text();
    const rows = csv.split('\r\n');
    assert.match(rows[2]!, /,opened,'=1\+1@rcpt\.example,'@203\.0\.113\.0,$/);
    assert.match(rows[3]!, /,opened,'\+bob@rcpt\.example,'-1,$/);
  });

  it('is append-only in the database: an UPDATE and an early DELETE are refused', async () => {
    const { id } = await sealFor(seal, 'bob@rcpt.example');
    await first(seal, id, { event: 'opened', recipient: 'bob@rcpt.example' });
    const db = seal.database.db;
    await assert.rejects(
      sql`update seal.sealed_trail set event = 'notified' where sealed_id = ${id}`.execute(db),
      /append-only/,
    );
    await assert.rejects(sql`delete from seal.sealed_trail where sealed_id = ${id}`.execute(db), /append-only/);
    // Stating a retention does not open the young entries either.
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await sql`select set_config('seal.trail_retention', '1 hour', true)`.execute(trx);
        await sql`delete from seal.sealed_trail where sealed_id = ${id}`.execute(trx);
      }),
      /append-only/,
    );
    await assert.rejects(sql`truncate seal.sealed_trail`.execute(db), /append-only/);
    const { rows } = await sql<{ event: string }>`
      select event from seal.sealed_trail where sealed_id = ${id} order by seq`.execute(db);
    assert.deepEqual(
      rows.map((row) => row.event),
      ['sealed', 'opened'],
    );
  });

  it('deletes the entries older than SEAL_TRAIL_RETENTION, and only those', async () => {
    const { id } = await sealFor(seal, 'bob@rcpt.example');
    const db = seal.database.db;
    await sql`
      insert into seal.sealed_trail (sealed_id, at, event, recipient) values
        (${id}, now() - interval '3 hours', 'opened', 'old@rcpt.example'),
        (${id}, now() - interval '50 minutes', 'opened', 'recent@rcpt.example')`.execute(db);
    const deleted = await seal.service.workers!.trailRetention!.runOnce();
    assert.ok((deleted as number) >= 1);
    const { rows } = await sql<{ event: string; recipient: string | null }>`
      select event, recipient from seal.sealed_trail where sealed_id = ${id} order by seq`.execute(db);
    assert.deepEqual(
      rows.map((row) => [row.event, row.recipient]),
      [
        ['sealed', null],
        ['opened', 'recent@rcpt.example'],
      ],
    );
  });
});
