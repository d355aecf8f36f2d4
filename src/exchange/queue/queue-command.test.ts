import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import { SEALPOST_BIN } from '../../../test/support/sealpost-process.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { exchangeService } from '../service.ts';
import type { EnvelopeStatus, ExchangeTables } from '../tables.ts';

const run = promisify(execFile);

describe('sealpost queue (mailq for the exchange)', () => {
  let exchange: ServiceUnderTest;
  const ids: Record<'accepted' | 'retrying' | 'delivering', string> = {
    accepted: randomUUID(),
    retrying: randomUUID(),
    delivering: randomUUID(),
  };

  before(async () => {
    // Delivery off: the envelopes stay exactly as written.
    exchange = await startServiceForTest(exchangeService, { env: { DELIVERY_ENABLED: 'false' } });
    const db = exchange.database.db.withSchema('exchange') as Kysely<ExchangeTables>;
    const row = (
      status: EnvelopeStatus,
      minutesOld: number,
      extra: { last_error?: string; attempts?: number } = {},
    ) => ({
      id: ids[status as keyof typeof ids],
      channel: 'smtp' as const,
      sender: `${status}@sender.example`,
      recipients: [`to-${status}@rcpt.example`],
      size: 2048,
      payload_key: `exchange/payloads/${ids[status as keyof typeof ids]}`,
      rule_id: null,
      outbound: ['smtp' as const],
      status,
      lease_until: status === 'delivering' ? new Date(Date.now() + 60_000) : null,
      last_error: extra.last_error ?? null,
      attempts: extra.attempts ?? 0,
      created_at: new Date(Date.now() - minutesOld * 60_000),
    });
    await db
      .insertInto('envelopes')
      .values([
        row('retrying', 90, { last_error: 'relay answered 451 4.3.0 try later', attempts: 3 }),
        row('accepted', 2),
        row('delivering', 5, { attempts: 1 }),
      ])
      .execute();
  });
  after(() => exchange?.stop());

  const queue = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [SEALPOST_BIN, 'queue', ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        EXCHANGE_URL: exchange.url,
        ADMIN_TOKEN: exchange.adminToken,
        ...env,
      },
    });

  it("lists the waiting envelopes oldest first, the retrying one's last error, and a summary by status", async () => {
    const { stdout } = await queue([]);
    const order = [ids.retrying, ids.delivering, ids.accepted].map((id) => stdout.indexOf(id));
    assert.ok(order.every((at) => at >= 0) && order[0]! < order[1]! && order[1]! < order[2]!, stdout);
    assert.match(
      stdout,
      new RegExp(
        `${ids.retrying}  retrying\\s+1h30m\\s+2048 bytes  attempts 3  <retrying@sender\\.example>\\n` +
          '    to-retrying@rcpt\\.example\\n' +
          '    next attempt \\S+: relay answered 451 4\\.3\\.0 try later',
      ),
    );
    assert.match(stdout, /-- 3 envelopes: .*1 retrying \(oldest 1h30m\)/);
    assert.match(stdout, /1 accepted \(oldest 2m0\ds\)/);
    assert.match(stdout, /1 delivering \(oldest 5m0\ds\)/);
  });

  it('prints the same as JSON with --json', async () => {
    const { stdout } = await queue(['--json']);
    const answer = JSON.parse(stdout) as {
      summary: Array<{ status: string; count: number }>;
      envelopes: Array<{ id: string; status: string; lastError: string | null }>;
    };
    assert.deepEqual(
      answer.envelopes.map((e) => [e.id, e.status]),
      [
        [ids.retrying, 'retrying'],
        [ids.delivering, 'delivering'],
        [ids.accepted, 'accepted'],
      ],
    );
    assert.equal(answer.envelopes[0]!.lastError, 'relay answered 451 4.3.0 try later');
    assert.deepEqual(Object.fromEntries(answer.summary.map((row) => [row.status, row.count])), {
      accepted: 1,
      delivering: 1,
      retrying: 1,
    });
  });

  it('fails with a named reason without the right admin token, or when the exchange does not answer', async () => {
    await assert.rejects(
      queue([], { ADMIN_TOKEN: 'wrong' }),
      (error: { code: number; stderr: string }) => error.code === 1 && /answered 401/.test(error.stderr),
    );
    await assert.rejects(
      queue([], { EXCHANGE_URL: 'http://127.0.0.1:1' }),
      (error: { code: number; stderr: string }) =>
        error.code === 1 && /EXCHANGE_URL=http:\/\/127\.0\.0\.1:1 does not answer/.test(error.stderr),
    );
  });

  it('exports the queue as gauges at scrape time: envelopes by status, age of the oldest waiting one', async () => {
    const metrics = await (await fetch(`${exchange.metricsUrl}/metrics`)).text();
    assert.match(metrics, /exchange_envelopes\{status="retrying",service="exchange"\} 1/);
    assert.match(metrics, /exchange_envelopes\{status="routed",service="exchange"\} 0/);
    const oldest = Number(
      /exchange_oldest_waiting_envelope_age_seconds\{service="exchange"\} ([\d.]+)/.exec(metrics)?.[1],
    );
    assert.ok(oldest >= 5400 && oldest < 5460, `oldest ${oldest}`);
  });
});
