import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import type { Intake } from '../handoff.ts';
import { OUTBOUND_STRATEGIES } from '../outbound/registry.ts';
import { defineOutboundStrategy } from '../outbound/types.ts';
import { createExchangeService } from '../service.ts';
import type { Envelope } from '../tables.ts';
import { intakeFor, metric, sampleMessage, settled } from '../../../test/support/exchange-delivery.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';

/** What the test-only strategy was handed, one entry per delivery. */
const captured: Array<{ envelope: Envelope; raw: Buffer }> = [];

/** A strategy Sealpost does not ship: keeps each message in memory. Lives in this test only. */
const captureStrategy = defineOutboundStrategy({
  name: 'capture',
  description: 'kept in memory by the test',
  create: () => ({
    async deliver(envelope: Envelope, openPayload: () => Promise<Readable>) {
      const chunks: Buffer[] = [];
      for await (const chunk of await openPayload()) chunks.push(chunk as Buffer);
      captured.push({ envelope, raw: Buffer.concat(chunks) });
      return { rejected: [], detail: `captured ${captured.length}` };
    },
  }),
});

describe('an outbound strategy added through the registry', () => {
  let exchange: ServiceUnderTest;
  let intake: Intake;
  const createRule = (outbound: string[]) =>
    fetch(`${exchange.url}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${exchange.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `to ${outbound.join(', ')}`,
        priority: 1,
        configuration: { params: { channel: 'smtp' }, outbound },
      }),
    });

  before(async () => {
    exchange = await startServiceForTest(
      createExchangeService({ outboundStrategies: [...OUTBOUND_STRATEGIES, captureStrategy] }),
      {
        env: { DELIVERY_POLL_INTERVAL: '25ms' },
      },
    );
    intake = intakeFor(exchange);
  });
  after(() => exchange?.stop());

  it('is accepted by the rules API, which still refuses names no strategy has', async () => {
    const unknown = await createRule(['webhook']);
    assert.equal(unknown.status, 400, await unknown.text());
    // maxItems follows the registry: every strategy once.
    const all = await createRule(['seal', 'smtp', 'capture']);
    assert.equal(all.status, 201, await all.text());
    await exchange.database.db.withSchema('exchange').deleteFrom('rules').execute();
  });

  it('delivers a message a rule routes to it', async () => {
    const created = await createRule(['capture']);
    assert.equal(created.status, 201, await created.text());
    const raw = sampleMessage({
      from: 'alice@sender.example',
      to: 'bob@rcpt.example',
      subject: 'Captured',
      messageId: '<captured@sender.example>',
    });
    const { envelopeId, outbound } = await intake.accept({
      channel: 'smtp',
      sender: 'alice@sender.example',
      recipients: ['bob@rcpt.example'],
      payload: raw,
    });
    assert.deepEqual(outbound, ['capture']);

    const history = await settled(exchange, envelopeId, 'delivered');
    assert.deepEqual(
      history.map((s) => s.status),
      ['accepted', 'routed', 'delivering', 'delivered'],
    );
    assert.match(history[1]!.detail!, /to capture$/);
    assert.match(history[3]!.detail!, /^capture: captured \d+$/);

    const mine = captured.filter((c) => c.envelope.id === envelopeId);
    assert.equal(mine.length, 1);
    assert.ok(mine[0]!.raw.equals(raw), 'the strategy received the stored bytes');
    assert.deepEqual(mine[0]!.envelope.recipients, ['bob@rcpt.example']);
    assert.equal(await metric(exchange, 'delivered_messages_total', { strategy: 'capture' }), 1);
  });
});
