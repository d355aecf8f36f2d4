import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';

/** Two auth instances on one database, as behind a load balancer; the limits must hold across both. */
async function startPair(
  env: Record<string, string>,
): Promise<{ one: AuthHarness; two: AuthHarness; stop(): Promise<void> }> {
  const one = await startAuthHarness({ env });
  const two = await startAuthHarness({ env, databaseUrl: one.auth.config.databaseUrl, seal: one.seal, sms: one.sms });
  return {
    one,
    two,
    async stop() {
      await two.stop();
      await one.stop();
    },
  };
}

async function session(reader: Reader, messageId: string): Promise<Reader> {
  await reader.get(`/v1/config?messageId=${messageId}`);
  return reader;
}

function requestCode(reader: Reader, messageId: string, who: { email: string; mobile: string } = ALICE) {
  return reader.request('POST', '/v1/auth/code', {
    body: { messageId, email: who.email, mobile: who.mobile, method: 'sms' },
  });
}

function retryAfter(response: { headers: Headers }): number {
  return Number(response.headers.get('retry-after'));
}

describe('SMS rate limits across two auth instances on one database', () => {
  describe('per number: 1 per interval (default 60 s)', () => {
    let pair: Awaited<ReturnType<typeof startPair>>;
    before(async () => {
      pair = await startPair({ SMS_LIMIT_IP_HOURLY: '1000' });
    });
    after(async () => {
      await pair?.stop();
    });

    it('refuses a second code to one number within 60 s, on either instance, with Retry-After', async () => {
      const record = pair.one.sealSample();
      const first = await requestCode(await session(pair.one.reader(), record.id), record.id);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const refused = await requestCode(await session(pair.two.reader(), record.id), record.id);
      assertError(refused, 429, 'sms_rate_limit');
      assert.ok(retryAfter(refused) > 50 && retryAfter(refused) <= 60, `Retry-After ${retryAfter(refused)}`);
      assert.equal(pair.one.sms.messages.length, 1);
    });

    it('lets only one of many simultaneous requests through', async () => {
      const bob = { email: 'bob.sms@example.com', mobile: '+41795550001' };
      const parallel = pair.one.seal.register({ raw: 'Subject: x\n\nx\n', recipients: [{ ...bob, method: 'sms' }] });
      const readers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => session((i % 2 ? pair.one : pair.two).reader(), parallel.id)),
      );
      const answers = await Promise.all(readers.map((reader) => requestCode(reader, parallel.id, bob)));
      assert.equal(answers.filter((a) => a.status === 200).length, 1, answers.map((a) => a.status).join(','));
      assert.equal(answers.filter((a) => a.status === 429).length, 9);
    });

    it('does not count a send the provider failed (502)', async () => {
      const carol = { email: 'carol@example.com', mobile: '+41795550002' };
      const record = pair.one.seal.register({ raw: 'Subject: x\n\nx\n', recipients: [{ ...carol, method: 'sms' }] });
      const reader = await session(pair.one.reader(), record.id);
      pair.one.sms.failWith(500);
      try {
        assertError(await requestCode(reader, record.id, carol), 502, 'upstream_failed');
      } finally {
        pair.one.sms.failWith(undefined);
      }
      const sent = await requestCode(reader, record.id, carol);
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assertError(await requestCode(reader, record.id, carol), 429, 'sms_rate_limit');
    });
  });

  describe('per number: 5 per hour', () => {
    let pair: Awaited<ReturnType<typeof startPair>>;
    before(async () => {
      pair = await startPair({ SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_IP_HOURLY: '1000' });
    });
    after(async () => {
      await pair?.stop();
    });

    it('refuses the sixth code within an hour, counting sends of both instances', async () => {
      const record = pair.one.sealSample();
      for (let i = 0; i < 5; i++) {
        const instance = i % 2 ? pair.two : pair.one;
        const sent = await requestCode(await session(instance.reader(), record.id), record.id);
        assert.equal(sent.status, 200, `send ${i + 1}: ${JSON.stringify(sent.body)}`);
      }
      const refused = await requestCode(await session(pair.two.reader(), record.id), record.id);
      assertError(refused, 429, 'sms_rate_limit');
      assert.ok(retryAfter(refused) > 3500 && retryAfter(refused) <= 3600, `Retry-After ${retryAfter(refused)}`);
    });

    it('keeps the earlier code valid when sending a new one failed', async () => {
      const dave = { email: 'dave@example.com', mobile: '+41795550003' };
      const record = pair.one.seal.register({ raw: 'Subject: x\n\nx\n', recipients: [{ ...dave, method: 'sms' }] });
      const reader = await session(pair.one.reader(), record.id);
      assert.equal((await requestCode(reader, record.id, dave)).status, 200);
      const code = pair.one.sms.lastCodeTo(dave.mobile);
      pair.one.sms.failWith(503);
      try {
        assertError(await requestCode(reader, record.id, dave), 502, 'upstream_failed');
      } finally {
        pair.one.sms.failWith(undefined);
      }
      assert.equal((await reader.request('POST', '/v1/auth/verify', { body: { code } })).status, 200);
    });

    it('does not count a send that timed out (SMS provider hanging)', async () => {
      const hang = await startAuthHarness({
        env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_NUMBER_HOURLY: '1', SMS_PROVIDER_TIMEOUT: '300ms' },
        databaseUrl: pair.one.auth.config.databaseUrl,
        seal: pair.one.seal,
        sms: pair.one.sms,
      });
      try {
        const erin = { email: 'erin@example.com', mobile: '+41795550004' };
        const record = hang.seal.register({ raw: 'Subject: x\n\nx\n', recipients: [{ ...erin, method: 'sms' }] });
        const reader = await session(hang.reader(), record.id);
        hang.sms.hang(true);
        try {
          assertError(await requestCode(reader, record.id, erin), 502, 'upstream_failed');
        } finally {
          hang.sms.hang(false);
        }
        assert.equal((await requestCode(reader, record.id, erin)).status, 200);
        assertError(await requestCode(reader, record.id, erin), 429, 'sms_rate_limit');
      } finally {
        await hang.stop();
      }
    });
  });

  describe('per client IP: 20 per hour by default, here 3', () => {
    let pair: Awaited<ReturnType<typeof startPair>>;
    before(async () => {
      pair = await startPair({ SMS_LIMIT_IP_HOURLY: '3', AUTH_TRUST_PROXY: 'true' });
    });
    after(async () => {
      await pair?.stop();
    });

    const people = Array.from({ length: 6 }, (_, i) => ({
      email: `p${i}@example.com`,
      mobile: `+4179555010${i}`,
      method: 'sms' as const,
    }));

    it('refuses the fourth code from one IP (behind the proxy), whatever the numbers, on either instance', async () => {
      const record = pair.one.seal.register({ raw: 'Subject: x\n\nx\n', recipients: people });
      for (let i = 0; i < 3; i++) {
        const reader = await session((i % 2 ? pair.two : pair.one).reader('198.51.100.1, 203.0.113.7'), record.id);
        assert.equal((await requestCode(reader, record.id, people[i])).status, 200);
      }
      const refused = await requestCode(await session(pair.two.reader('203.0.113.7'), record.id), record.id, people[3]);
      assertError(refused, 429, 'sms_rate_limit');
      assert.ok(retryAfter(refused) > 3500);
      // Another client is not affected.
      assert.equal(
        (await requestCode(await session(pair.one.reader('203.0.113.8'), record.id), record.id, people[3])).status,
        200,
      );
    });

    it('counts IPv6 clients by their /64', async () => {
      const others = people.map((p, i) => ({ ...p, email: `v6-${p.email}`, mobile: `+4179555020${i}` }));
      const record = pair.one.seal.register({ raw: 'Subject: x\n\nx\n', recipients: others });
      for (let i = 0; i < 3; i++) {
        const reader = await session(pair.one.reader(`2001:db8:1:2::${i + 1}`), record.id);
        assert.equal((await requestCode(reader, record.id, others[i])).status, 200, `send ${i + 1}`);
      }
      const sameNet = await session(pair.two.reader('2001:db8:1:2:ffff:ffff:ffff:ffff'), record.id);
      assertError(await requestCode(sameNet, record.id, others[4]), 429, 'sms_rate_limit');
      const otherNet = await session(pair.two.reader('2001:db8:1:3::1'), record.id);
      assert.equal((await requestCode(otherNet, record.id, others[4])).status, 200);
    });
  });
});
