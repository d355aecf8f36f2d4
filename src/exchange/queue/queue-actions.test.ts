import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import { SEALPOST_BIN } from '../../../test/support/sealpost-process.ts';
import { startS3Server, swiftUnavailable, type S3TestServer } from '../../../test/support/s3-server.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { EnvelopeQueue } from '../delivery/queue.ts';
import { exchangeService } from '../service.ts';
import type { EnvelopeStatus, ExchangeTables } from '../tables.ts';

const run = promisify(execFile);

describe('sealpost queue flush|hold|release|requeue|delete|shape against a running exchange', {
  skip: swiftUnavailable(),
}, () => {
  let s3: S3TestServer;
  let exchange: ServiceUnderTest;
  let db: Kysely<ExchangeTables>;

  before(async () => {
    s3 = await startS3Server();
    // Delivery off: only the test claims envelopes (through EnvelopeQueue, as a worker does). Payloads on S3.
    exchange = await startServiceForTest(exchangeService, { s3, env: { DELIVERY_ENABLED: 'false' } });
    db = exchange.database.db.withSchema('exchange') as Kysely<ExchangeTables>;
  });
  after(async () => {
    await exchange?.stop();
    await s3?.stop();
  });

  /** An envelope with its payload in the object store; returns its id. */
  async function envelope(
    options: {
      status?: EnvelopeStatus;
      recipients?: string[];
      minutesOld?: number;
      dueInMinutes?: number;
      attempts?: number;
    } = {},
  ): Promise<string> {
    const id = randomUUID();
    const payloadKey = `exchange/payloads/${id}`;
    await exchange.objects.put(payloadKey, 'Subject: hello\r\n\r\nbody\r\n');
    await db
      .insertInto('envelopes')
      .values({
        id,
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: options.recipients ?? ['someone@rcpt.example'],
        size: 26,
        payload_key: payloadKey,
        rule_id: null,
        outbound: ['smtp'],
        status: options.status ?? 'accepted',
        attempts: options.attempts ?? 0,
        lease_until: options.status === 'delivering' ? new Date(Date.now() + 600_000) : null,
        last_error: null,
        next_attempt_at: new Date(Date.now() + (options.dueInMinutes ?? 0) * 60_000),
        created_at: new Date(Date.now() - (options.minutesOld ?? 0) * 60_000),
      })
      .execute();
    return id;
  }

  const statusOf = async (id: string) =>
    (await db.selectFrom('envelopes').select('status').where('id', '=', id).executeTakeFirst())?.status;
  const history = async (id: string) =>
    (
      await db
        .selectFrom('message_status')
        .select(['status', 'detail'])
        .where('envelope_id', '=', id)
        .orderBy('id')
        .execute()
    ).map((row) => `${row.status}: ${row.detail}`);

  const sealpost = (args: string[]) =>
    run(process.execPath, [SEALPOST_BIN, 'queue', ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        EXCHANGE_URL: exchange.url,
        ADMIN_TOKEN: exchange.adminToken,
      },
    });
  const fails = (args: string[], code: number, stderr: RegExp) =>
    assert.rejects(sealpost(args), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, code, error.stderr);
      assert.match(error.stderr, stderr);
      return true;
    });

  it('holds an envelope so that no worker claims it, and releases it so that the next claim takes it', async () => {
    const held = await envelope();
    const { stdout } = await sealpost(['hold', held]);
    assert.match(stdout, new RegExp(`held: 1 envelope\\n  ${held}`));
    assert.equal(await statusOf(held), 'held');

    const workers = new EnvelopeQueue(db, 60_000);
    const claimed = await workers.claimDue(100);
    assert.ok(!claimed.some((claim) => claim.id === held), 'a held envelope was claimed');
    assert.match((await sealpost([])).stdout, new RegExp(`${held}  held`));

    await sealpost(['release', held]);
    assert.equal(await statusOf(held), 'accepted');
    assert.deepEqual(
      (await workers.claimDue(100)).map((claim) => claim.id),
      [held],
    );
    assert.deepEqual((await history(held)).slice(-3), [
      'held: held by an operator',
      'accepted: released by an operator',
      'delivering: attempt 1',
    ]);
  });

  it('flushes deferred envelopes: a retry due in an hour is due now', async () => {
    const later = await envelope({ status: 'retrying', attempts: 2, dueInMinutes: 60 });
    const { stdout } = await sealpost(['flush']);
    assert.match(stdout, /due now: \d+ envelopes?/);
    assert.match(stdout, new RegExp(later));
    const row = await db
      .selectFrom('envelopes')
      .select('next_attempt_at')
      .where('id', '=', later)
      .executeTakeFirstOrThrow();
    assert.ok(row.next_attempt_at.getTime() <= Date.now(), `due at ${row.next_attempt_at.toISOString()}`);
    // A held one is released first: flush never takes it.
    const held = await envelope({ status: 'held', dueInMinutes: 60 });
    await sealpost(['flush']);
    assert.equal(await statusOf(held), 'held');
  });

  it('leaves an envelope being delivered alone and says why (exit 1)', async () => {
    const busy = await envelope({ status: 'delivering', attempts: 1 });
    await fails(['hold', busy], 1, new RegExp(`not held: ${busy}: being delivered`));
    assert.equal(await statusOf(busy), 'delivering');
  });

  it('asks before deleting: refuses without a terminal and without --yes, deleting nothing', async () => {
    const kept = await envelope();
    await fails(['delete', kept], 2, /standard input is not a terminal; add --yes/);
    assert.equal(await statusOf(kept), 'accepted');
    assert.ok(await exchange.objects.head(`exchange/payloads/${kept}`));
  });

  it('deletes after a yes typed on a terminal, and keeps everything after a no', async () => {
    const asked = await envelope();
    // `script` gives the command a terminal; what the test writes to its stdin is what a person types.
    const onTerminal = (answer: string) =>
      new Promise<string>((resolve, reject) => {
        const command = [process.execPath, SEALPOST_BIN, 'queue', 'delete', asked]
          .map((w) => JSON.stringify(w))
          .join(' ');
        const child = spawn('script', ['-qfec', command, '/dev/null'], {
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '/tmp',
            TERM: 'dumb',
            EXCHANGE_URL: exchange.url,
            ADMIN_TOKEN: exchange.adminToken,
          },
        });
        let out = '';
        child.stdout.on('data', (chunk) => {
          out += chunk;
          if (out.includes('[y/N]') && !child.stdin.writableEnded) child.stdin.end(`${answer}\n`);
        });
        child.on('error', reject);
        child.on('exit', () => resolve(out));
      });
    const declined = await onTerminal('n');
    assert.match(declined, /Delete 1 envelope \([0-9a-f-]{36}\) and their messages, without a bounce\? \[y\/N\]/);
    assert.match(declined, /Nothing deleted\./);
    assert.equal(await statusOf(asked), 'accepted');
    assert.match(await onTerminal('y'), /deleted: 1 envelope/);
    assert.equal(await statusOf(asked), undefined);
  });

  it('deletes one envelope with --yes: its row and payload go, its history records the deletion', async () => {
    const doomed = await envelope({ status: 'retrying', attempts: 1 });
    const { stdout } = await sealpost(['delete', doomed, '--yes']);
    assert.match(stdout, new RegExp(`deleted: 1 envelope\\n  ${doomed}`));
    assert.equal(await statusOf(doomed), undefined);
    assert.equal(await exchange.objects.head(`exchange/payloads/${doomed}`), undefined);
    assert.deepEqual((await history(doomed)).at(-1), 'deleted: deleted by an operator');
  });

  it('deletes by filter: only the envelopes with a recipient in that domain', async () => {
    const there = await envelope({ recipients: ['a@sub.gone.example'] });
    const elsewhere = await envelope({ recipients: ['a@kept.example'] });
    await sealpost(['delete', '--recipient-domain', 'gone.example', '--yes']);
    assert.equal(await statusOf(there), undefined);
    assert.equal(await statusOf(elsewhere), 'accepted');
  });

  it('requeues: the envelope is routed again by the rules as they are now', async () => {
    const stuck = await envelope({
      status: 'retrying',
      attempts: 3,
      dueInMinutes: 30,
      recipients: ['x@requeue.example'],
    });
    await fails(['requeue', stuck], 1, /no rule takes every recipient now/);
    const added = await fetch(`${exchange.url}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${exchange.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'seal requeue.example',
        priority: 5,
        configuration: { params: { channel: 'smtp', recipientDomains: ['requeue.example'] }, outbound: ['seal'] },
      }),
    });
    assert.equal(added.status, 201);
    await sealpost(['requeue', stuck]);
    const row = await db
      .selectFrom('envelopes')
      .select(['outbound', 'status', 'next_attempt_at'])
      .where('id', '=', stuck)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row.outbound, ['seal']);
    assert.equal(row.status, 'retrying');
    assert.ok(row.next_attempt_at.getTime() <= Date.now());
    assert.match((await history(stuck)).at(-1)!, /requeued by an operator: rule "seal requeue.example"/);
  });

  it('requeues by a rule that reads the subject: the header block comes from the stored payload', async () => {
    const tagged = await envelope({ recipients: ['y@subject.example'] });
    const added = await fetch(`${exchange.url}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${exchange.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'hello subjects',
        priority: 1,
        configuration: {
          params: { channel: 'smtp', subjectContains: 'hello', recipientDomains: ['subject.example'] },
          outbound: ['seal', 'smtp'],
        },
      }),
    });
    assert.equal(added.status, 201);
    await sealpost(['requeue', tagged]);
    const row = await db
      .selectFrom('envelopes')
      .select(['outbound', 'status'])
      .where('id', '=', tagged)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row.outbound, ['seal', 'smtp']);
    assert.equal(row.status, 'accepted');
  });

  it('shows the shape of the queue by destination domain and age, like qshape', async () => {
    await envelope({ recipients: ['a@shape.example', 'b@shape.example'], minutesOld: 7 });
    await envelope({ recipients: ['c@shape.example'], minutesOld: 300 });
    const { stdout } = await sealpost(['shape', '--top', '50']);
    const [head, , ...rows] = stdout.trimEnd().split('\n');
    assert.match(head!, /T +0 +5 +10 +20 +40 +80 +160 +320 +640 +1280\+$/);
    const shape = rows.find((row) => row.trim().startsWith('shape.example'));
    // total 3: two recipients in the 5–10 minute bucket, one in the 160–320 one.
    assert.match(shape!, /shape\.example +3 +0 +2 +0 +0 +0 +0 +1 +0 +0 +0$/);
    const json = JSON.parse((await sealpost(['shape', '--by', 'sender', '--json'])).stdout) as {
      domains: Array<{ domain: string }>;
    };
    assert.ok(json.domains.some((row) => row.domain === 'org.example'));
  });

  it('refuses unknown flags and a missing selection with exit 2 and the usage', async () => {
    await fails(['--bogus'], 2, /Unknown option '--bogus'[\s\S]*Usage: sealpost queue/);
    await fails(['hold'], 2, /say which envelopes/);
    await fails(['shape', '--by', 'size'], 2, /--by "size": expected recipient or sender/);
  });
});
