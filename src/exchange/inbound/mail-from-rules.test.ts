import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import { envelopeCount, exchangeDb, payloadCount } from '../../../test/support/exchange-delivery.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';

const TTL_MS = 1000;
const CATCH_ALL = {
  name: 'all smtp',
  priority: 1,
  configuration: { params: { channel: 'smtp' as const }, outbound: ['seal' as const] },
};

/**
 * MAIL FROM answers "a rule applies" from the rules as read at most SMTP_RULE_CACHE_TTL ago; "no rule" it
 * asks PostgreSQL for, and the envelope's own statement decides the route (rules/snapshot.ts).
 */
describe('the delivery rule at MAIL FROM, from a snapshot of the rules', () => {
  let exchange: ServiceUnderTest;
  /** Rules written as another exchange instance on the same database writes them. */
  let elsewhere: RuleStore;
  let port: number;
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${exchange.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${exchange.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  /** MAIL FROM's reply and, when it is 250, the reply after a whole message. */
  async function attempt(from = 'alice@example.com'): Promise<{ mailFrom: string; data?: string }> {
    const { talk } = await SmtpTalk.open(port);
    try {
      assert.match(await talk.send('EHLO test.local'), /^250-/);
      const mailFrom = await talk.send(`MAIL FROM:<${from}>`);
      if (!mailFrom.startsWith('250')) return { mailFrom };
      assert.match(await talk.send('RCPT TO:<bob@example.com>'), /^250 /);
      assert.match(await talk.send('DATA'), /^354 /);
      talk.write('Subject: snapshot\r\n\r\nhello\r\n.\r\n');
      return { mailFrom, data: await talk.reply() };
    } finally {
      talk.close();
    }
  }

  before(async () => {
    exchange = await startServiceForTest(exchangeService, {
      env: { DELIVERY_ENABLED: 'false', SEAL_URL: 'http://127.0.0.1:9', SMTP_RULE_CACHE_TTL: `${TTL_MS}ms` },
    });
    elsewhere = new RuleStore(exchangeDb(exchange));
    port = Number(new URL(exchange.service.listening.smtp!).port);
  });
  after(() => exchange?.stop());
  beforeEach(async () => {
    await exchangeDb(exchange).deleteFrom('rules').execute();
    await sleep(TTL_MS + 50);
  });

  it('takes a rule created on another instance at once: "no rule" is never answered from the snapshot', async () => {
    assert.match((await attempt()).mailFrom, /^451 4\.3\.0 No delivery rule exists yet/);
    await elsewhere.create(CATCH_ALL);
    const { mailFrom, data } = await attempt();
    assert.match(mailFrom, /^250 /);
    assert.match(data ?? '', /^250 .*queued as/);
  });

  it('refuses after DATA, storing nothing, a message whose rule another instance deleted within the TTL', async () => {
    await elsewhere.create(CATCH_ALL);
    assert.match((await attempt()).data ?? '', /^250 /);
    await sleep(50); // the snapshot's read, started by that MAIL FROM, is in
    const [envelopes, payloads] = [await envelopeCount(exchangeDb(exchange)), await payloadCount(exchange.objects)];
    await exchangeDb(exchange).deleteFrom('rules').execute();

    const stale = await attempt();
    assert.match(stale.mailFrom, /^250 /, 'the snapshot still holds the rule');
    assert.match(stale.data ?? '', /^451 4\.3\.0 No delivery rule exists yet/);
    assert.equal(await envelopeCount(exchangeDb(exchange)), envelopes);
    assert.equal(await payloadCount(exchange.objects), payloads);

    await sleep(TTL_MS + 50);
    // The first lookup after the TTL asks PostgreSQL.
    assert.match((await attempt()).mailFrom, /^451 4\.3\.0 No delivery rule exists yet/);
  });

  it('answers from the rules as changed through its own API at once', async () => {
    const created = await admin('POST', '/v1/config', CATCH_ALL);
    assert.equal(created.status, 201);
    assert.match((await attempt()).data ?? '', /^250 /);
    const { id } = (await created.json()) as { id: string };
    assert.equal((await admin('DELETE', `/v1/config/${id}`)).status, 204);
    assert.match((await attempt()).mailFrom, /^451 4\.3\.0 No delivery rule exists yet/);

    const narrowed = await admin('POST', '/v1/config', CATCH_ALL);
    assert.match((await attempt()).mailFrom, /^250 /);
    const { id: again } = (await narrowed.json()) as { id: string };
    const put = await admin('PUT', `/v1/config/${again}`, {
      ...CATCH_ALL,
      configuration: { params: { channel: 'smtp', sender: 'carol@example.com' }, outbound: ['seal'] },
    });
    assert.equal(put.status, 200);
    assert.match((await attempt()).mailFrom, /^451 4\.3\.0 No delivery rule matches channel smtp/);
    assert.match((await attempt('carol@example.com')).data ?? '', /^250 /);
  });
});
