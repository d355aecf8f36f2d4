import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  postSeal,
  rawMessage,
  standInCluster,
  startSealWithClusters,
  startStandIn,
  type StandIn,
} from '../../../test/support/seal.ts';
import type { ServiceUnderTest } from '../../../test/support/services.ts';

const admin = (service: ServiceUnderTest, path: string) =>
  fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${service.adminToken}` } });
const sealed = async (service: ServiceUnderTest, id: string) =>
  (await (
    await fetch(`${service.url}/v1/sealed/${id}`, { headers: { authorization: `Bearer ${service.serviceToken}` } })
  ).json()) as {
    pins: Array<{ cluster: string; status: string; error?: string; attempts: number }>;
  };
const until = async <T>(probe: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
  let value = await probe();
  for (let i = 0; i < 100 && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
};

describe('pins followed until they hold', () => {
  const stops: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });
  async function standIn(options: Parameters<typeof startStandIn>[0] = {}): Promise<StandIn> {
    const s = await startStandIn(options);
    stops.push(() => s.close());
    return s;
  }

  it('records pin_error when IPFS cannot fetch; lists, counts, reports it once past SEAL_PIN_DEADLINE', async () => {
    const primary = await standIn();
    const isolated = await standIn({ peering: false });
    const seal = await startSealWithClusters([standInCluster(primary), standInCluster(isolated)], {
      SEAL_PIN_CHECK_INTERVAL: '100ms',
      SEAL_REPIN_INTERVAL: '1h',
      SEAL_PIN_DEADLINE: '300ms',
    });
    stops.push(() => seal.stop());
    const response = await postSeal(seal, rawMessage());
    assert.equal(response.status, 201, 'the seal succeeds: the primary holds the content');
    const { id, cid } = await response.json();

    const { pins } = await until(
      () => sealed(seal, id),
      (view) => view.pins[1]!.status === 'pin_error',
    );
    assert.deepEqual(
      pins.map((pin) => pin.status),
      ['pinned', 'pin_error'],
    );
    assert.match(pins[1]!.error!, /no peer has the blocks/, "the cluster's own message is kept");
    assert.ok(isolated.pins().has(cid), 'the cluster had accepted the pin (200) before IPFS failed it');

    assert.equal((await fetch(`${seal.url}/v1/admin/unpinned`)).status, 401, 'admin token required');
    const listed = await until(
      async () =>
        (await (await admin(seal, '/v1/admin/unpinned')).json()) as {
          seals: Array<{ id: string; overdue: boolean; pins: Array<{ status: string }> }>;
        },
      (list) => list.seals[0]?.overdue === true,
    );
    assert.deepEqual(
      listed.seals.map((s) => [s.id, s.overdue, s.pins.map((pin) => pin.status)]),
      [[id, true, ['pinned', 'pin_error']]],
    );

    const overdueLogs = await until(
      async () =>
        seal.logs.filter((line) => line.msg === 'sealed message not pinned on every cluster within SEAL_PIN_DEADLINE'),
      (lines) => lines.length > 0,
    );
    assert.equal(overdueLogs.length, 1);
    assert.equal(overdueLogs[0]!.level, 50, 'logged as an error');
    // More passes, each of which finds the pin still overdue.
    for (let pass = 0; pass < 3; pass++) await seal.service.workers!.pinFollower!.runOnce();
    assert.equal(
      seal.logs.filter((line) => line.msg === overdueLogs[0]!.msg).length,
      1,
      'once per pin, not every pass',
    );

    const metrics = await (await fetch(`${seal.metricsUrl}/metrics`)).text();
    assert.match(
      metrics,
      new RegExp(`seal_pins_open\\{cluster="127\\.0\\.0\\.1:${isolated.port}",state="pin_error",service="seal"\\} 1`),
    );
    assert.match(
      metrics,
      new RegExp(`seal_pins_open\\{cluster="127\\.0\\.0\\.1:${primary.port}",state="pin_error",service="seal"\\} 0`),
    );
    assert.match(
      metrics,
      new RegExp(`seal_pins_overdue\\{cluster="127\\.0\\.0\\.1:${isolated.port}",service="seal"\\} 1`),
    );
  });

  it('pins a pin_error again once the IPFS daemon is back, and the seal leaves the admin list', async () => {
    const primary = await standIn();
    const secondary = await standIn();
    const seal = await startSealWithClusters([standInCluster(primary), standInCluster(secondary)], {
      SEAL_PIN_CHECK_INTERVAL: '100ms',
      SEAL_REPIN_INTERVAL: '200ms',
    });
    stops.push(() => seal.stop());
    secondary.setIpfsDown(true);
    const response = await postSeal(seal, rawMessage());
    assert.equal(response.status, 201);
    const { id, cid, pins } = await response.json();
    assert.equal(pins[1].status, 'pin_error');
    assert.match(pins[1].error, /connection refused/);

    secondary.setIpfsDown(false);
    const view = await until(
      () => sealed(seal, id),
      (v) => v.pins[1]!.status === 'pinned',
    );
    assert.deepEqual(
      view.pins.map((pin) => pin.status),
      ['pinned', 'pinned'],
    );
    assert.ok(view.pins[1]!.attempts >= 2, 'pinned again');
    assert.ok(
      secondary.requests.filter((req) => req.method === 'POST' && req.path === `/pins/${cid}`).length >= 2,
      'pinned again',
    );
    assert.deepEqual((await (await admin(seal, '/v1/admin/unpinned')).json()).seals, []);
  });

  it('is not ready while the primary answers /id but its IPFS daemon does not', async () => {
    const primary = await standIn();
    const seal = await startSealWithClusters([standInCluster(primary)]);
    stops.push(() => seal.stop());
    const first = await fetch(`${seal.url}/readyz`);
    assert.equal(first.status, 200, await first.clone().text());
    primary.setIpfsDown(true);
    const ready = await fetch(`${seal.url}/readyz`);
    assert.equal(ready.status, 503);
    assert.match(
      (await ready.json()).message,
      /^Not ready: ipfsCluster \S+ answers, but the IPFS daemon behind it does not: dial tcp/,
    );
    primary.setIpfsDown(false);
    assert.equal((await fetch(`${seal.url}/readyz`)).status, 200);
  });
});
