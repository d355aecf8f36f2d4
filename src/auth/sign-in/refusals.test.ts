import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader, ReaderResponse } from '../../../test/support/auth-reader.ts';
import { REFUSALS_PER_CLIENT_FACTOR, REFUSALS_PER_MESSAGE_FACTOR } from '../codes/limits.ts';
import type { AuthTables } from '../tables.ts';

const IP_HOURLY = 3;
const PER_CLIENT = IP_HOURLY * REFUSALS_PER_CLIENT_FACTOR;
const PER_MESSAGE = IP_HOURLY * REFUSALS_PER_MESSAGE_FACTOR;

/** A valid mobile number that is not ALICE's, different for every `n`. */
const wrongNumber = (n: number) => `+4179${String(7000000 + n)}`;

/**
 * Refused code requests (unauthorized_user, forbidden_auth_method, email_and_mobile_mismatch) are
 * limited like sends: otherwise anyone with a reader link could try numbers and addresses for free.
 * Two instances on one database, as behind a load balancer; clients told apart by X-Forwarded-For.
 */
describe('limits on refused code requests, across two auth instances on one database', () => {
  let one: AuthHarness;
  let two: AuthHarness;
  let db: Kysely<AuthTables>;

  before(async () => {
    // The per-number limits are not under test: ALICE's number gets codes in every test here.
    const env = {
      SMS_LIMIT_IP_HOURLY: String(IP_HOURLY),
      SMS_LIMIT_NUMBER_INTERVAL: '0s',
      SMS_LIMIT_NUMBER_HOURLY: '1000',
      AUTH_TRUST_PROXY: 'true',
    };
    one = await startAuthHarness({ env });
    two = await startAuthHarness({ env, databaseUrl: one.auth.config.databaseUrl, seal: one.seal, sms: one.sms });
    db = one.auth.database.db.withSchema('auth') as Kysely<AuthTables>;
  });
  after(async () => {
    await two?.stop();
    await one?.stop();
  });

  let requests = 0;
  /** A code request from `client` in a fresh session, on alternating instances. */
  async function ask(client: string, messageId: string, body: Record<string, unknown>): Promise<ReaderResponse> {
    const reader: Reader = (requests++ % 2 ? two : one).reader(client);
    await reader.get('/v1/config');
    return reader.request('POST', '/v1/auth/code', {
      body: { messageId, email: ALICE.email, mobile: ALICE.mobile, method: 'sms', ...body },
    });
  }
  const retryAfter = (response: ReaderResponse) => Number(response.headers.get('retry-after'));
  /** As if the hour had passed for everything recorded so far. */
  const letAnHourPass = () =>
    sql`update auth.code_refusals set refused_at = refused_at - interval '1 hour'`.execute(db);

  it(`sms_rate_limit after ${PER_CLIENT} wrong numbers from a client, the right one too, for an hour`, async () => {
    const record = one.sealSample();
    const client = '203.0.113.10';
    const sent = one.sms.messages.length;
    for (let i = 0; i < PER_CLIENT; i++) {
      assertError(await ask(client, record.id, { mobile: wrongNumber(i) }), 403, 'email_and_mobile_mismatch');
    }
    const limited = await ask(client, record.id, { mobile: wrongNumber(99) });
    assertError(limited, 429, 'sms_rate_limit');
    assert.ok(retryAfter(limited) > 3500 && retryAfter(limited) <= 3600, `Retry-After ${retryAfter(limited)}`);
    // The right number no longer tells the prober it is right.
    const right = await ask(client, record.id, {});
    assertError(right, 429, 'sms_rate_limit');
    assert.ok(retryAfter(right) > 3500, `Retry-After ${retryAfter(right)}`);
    assert.equal(one.sms.messages.length, sent, 'no SMS went out');
    // Another client is not affected (the message is below its own limit).
    assert.equal((await ask('203.0.113.11', record.id, {})).status, 200);

    await letAnHourPass();
    const later = await ask(client, record.id, {});
    assert.equal(later.status, 200, JSON.stringify(later.body));
  });

  it('counts unknown addresses and the wrong method as refusals too, and invalid input not at all', async () => {
    const record = one.sealSample();
    const client = '203.0.113.20';
    for (let i = 0; i < 5; i++) assertError(await ask(client, record.id, { mobile: '12345' }), 400, 'invalid_mobile');
    const refusals = [
      () => ask(client, record.id, { email: 'eve@example.com' }),
      () => ask(client, record.id, { method: 'email', mobile: undefined }),
      () => ask(client, 'no-such-message', {}),
      () => ask(client, record.id, { mobile: wrongNumber(1) }),
    ];
    const expected = ['unauthorized_user', 'forbidden_auth_method', 'unauthorized_user', 'email_and_mobile_mismatch'];
    for (let i = 0; i < PER_CLIENT; i++) {
      const answer = await refusals[i % refusals.length]!();
      assertError(answer, 403, expected[i % refusals.length]!);
    }
    assertError(await ask(client, record.id, { email: 'eve@example.com' }), 429, 'sms_rate_limit');
    await letAnHourPass();
  });

  it('leaves nothing counted for a request that was not refused', async () => {
    const record = one.sealSample();
    const client = '203.0.113.30';
    // Sent, sent, sent, then refused by the send limit (SMS_LIMIT_IP_HOURLY): none of them is a refusal.
    const statuses: number[] = [];
    for (let i = 0; i <= IP_HOURLY; i++) statuses.push((await ask(client, record.id, {})).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const rows = await db.selectFrom('code_refusals').select('id').where('client', '=', client).execute();
    assert.equal(rows.length, 0);
  });

  it(`refuses a message's requests after ${PER_MESSAGE} refusals from many clients, each under its limit`, async () => {
    const record = one.sealSample();
    const other = one.sealSample();
    for (let i = 0; i < PER_MESSAGE; i++) {
      assertError(
        await ask(`198.51.100.${i + 1}`, record.id, { mobile: wrongNumber(i) }),
        403,
        'email_and_mobile_mismatch',
      );
    }
    assertError(await ask('198.51.100.200', record.id, {}), 429, 'sms_rate_limit');
    assert.equal((await ask('198.51.100.201', other.id, {})).status, 200, 'other messages are not affected');
    await letAnHourPass();
    assert.equal((await ask('198.51.100.202', record.id, {})).status, 200);
  });

  it('counts parallel refusals exactly, on both instances', async () => {
    const record = one.sealSample();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => ask('203.0.113.40', record.id, { mobile: wrongNumber(i) })),
    );
    assert.equal(answers.filter((a) => a.status === 403).length, PER_CLIENT, answers.map((a) => a.status).join(','));
    assert.ok(
      answers.filter((a) => a.status !== 403).every((a) => a.status === 429 && a.body.errorCode === 'sms_rate_limit'),
    );
  });
});
