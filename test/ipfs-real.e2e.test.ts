import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import nodemailer from 'nodemailer';
import { migrateSchema, openDatabase } from '../src/kernel/db/index.ts';
import { normalizeClusters } from '../src/seal/clusters/config.ts';
import { ClusterConfigStore } from '../src/seal/clusters/store.ts';
import { singleKeyring } from '../src/seal/crypto/environment-key.ts';
import { sealService } from '../src/seal/service.ts';
import type { SealTables } from '../src/seal/tables.ts';
import { Reader } from './support/auth-reader.ts';
import { restGet, startRealClusters, type RealClusters } from './support/ipfs-real.ts';
import { createTestDatabase } from './support/postgres.ts';
import { postSeal, rawMessage, startSealWithClusters, TEST_MASTER_KEY } from './support/seal.ts';
import { startSealpostProcess, type SealpostProcess } from './support/sealpost-process.ts';
import { startSmsCapture, type SmsCapture } from './support/sms-capture.ts';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.ts';

/**
 * Sealpost (`sealpost start all` as a process) against two real IPFS Clusters with their Kubo nodes:
 * mail in over SMTP, sealed on the primary, followed until both clusters hold it, read verified; then
 * the faults only the real servers show: a secondary whose Kubo is stopped while a message is sealed,
 * and a primary whose Kubo is stopped (not ready, seals retried by the exchange, nothing lost). Then, on a
 * pair of their own, damaged and missing copies as reads and the scrub see them.
 */

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const SERVICE_TOKEN = 'e2e-service-token-0123456789abcdef';
const ALICE = { email: 'alice@example.com', mobile: '+41791234567' };
// Recipients of the end-date tests, each with a number of its own (SMS codes are limited per number).
const CAROL = { email: 'carol@example.com', mobile: '+41791110001' };
const DAVE = { email: 'dave@example.com', mobile: '+41791110002' };
const ERIN = { email: 'erin@example.com', mobile: '+41791110003' };

type Pin = { cluster: string; status: string; error?: string };

describe('sealing against the real IPFS Cluster and Kubo, end to end', () => {
  let clusters: RealClusters;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataDir: string;
  let sink: SmtpSink;
  let sms: SmsCapture;
  let sealpost: SealpostProcess;
  let names: { primary: string; secondary: string };

  before(async () => {
    clusters = await startRealClusters();
    names = {
      primary: `127.0.0.1:${clusters.primary.restPort}`,
      secondary: `127.0.0.1:${clusters.secondary.restPort}`,
    };
    database = await createTestDatabase('ipfs_e2e');
    // The configuration stored through POST /v1/ipfs/config before a restart, written directly.
    const db = await openDatabase({ url: database.url, poolSize: 1 });
    try {
      await migrateSchema(db.db, sealService.migrations);
      const store = new ClusterConfigStore(
        db.db.withSchema('seal') as Kysely<SealTables>,
        singleKeyring(Buffer.from(TEST_MASTER_KEY, 'hex')),
      );
      const cluster = (c: RealClusters['primary']) => ({
        host: '127.0.0.1',
        port: String(c.restPort),
        user: c.user,
        pass: c.pass,
        secure: c.secure,
        timeout: '20s',
      });
      await store.save(
        normalizeClusters({
          clusters: [
            { ...cluster(clusters.primary), pinParams: { name: 'sealpost e2e' } },
            cluster(clusters.secondary),
          ],
        }),
      );
    } finally {
      await db.close();
    }
    dataDir = await mkdtemp(join(tmpdir(), 'sealpost-ipfs-e2e-'));
    sink = await startSmtpSink();
    sms = await startSmsCapture();
    sealpost = await startSealpostProcess(
      {
        SEALPOST_DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        SEAL_MASTER_KEY: TEST_MASTER_KEY,
        ADMIN_TOKEN,
        SERVICE_TOKEN,
        // Reads go through the primary's IPFS proxy; the secondary's REST API is HTTPS with the test CA.
        IPFS_CLUSTER_HOST: '127.0.0.1',
        IPFS_CLUSTER_PORT: String(clusters.primary.restPort),
        IPFS_CLUSTER_SECURE: 'false',
        IPFS_PROXY_PORT: String(clusters.primary.proxyPort),
        IPFS_CLUSTER_CA_FILE: clusters.ca.certPath,
        SEAL_PIN_CHECK_INTERVAL: '500ms',
        SEAL_END_INTERVAL: '500ms',
        SEAL_REPIN_INTERVAL: '1s',
        SMS_PROVIDER: 'http',
        SMS_PROVIDER_URL: `${sms.url}/sms`,
        OUTBOUND_SMTP_URL: sink.url,
        DELIVERY_POLL_INTERVAL: '100ms',
        DELIVERY_RETRY_BASE: '1s',
      },
      { timeoutMs: 120_000 },
    );
    const rule = await fetch(`${sealpost.urls.exchange}/v1/config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'seal smtp mail',
        priority: 1,
        configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
      }),
    });
    assert.ok(rule.status === 201 || rule.status === 200, await rule.text());
  });

  after(async () => {
    await sealpost?.stop();
    await clusters?.stop();
    await sink?.close();
    await sms?.close();
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function send(subject: string, extra: { to?: (typeof ALICE)[]; expires?: string } = {}): Promise<void> {
    const to = extra.to ?? [ALICE];
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: sealpost.ports.smtp,
      secure: false,
      ignoreTLS: true,
    });
    try {
      await transport.sendMail({
        from: 'Dana Sender <dana@sender.example>',
        to: to.map((r) => r.email),
        subject,
        text: `${subject}: the figures.`,
        headers: [
          ...to.map((r) => ({ key: 'X-Sealpost-Mobile', value: `${r.email}=${r.mobile}` })),
          ...(extra.expires ? [{ key: 'X-Sealpost-Expires', value: extra.expires }] : []),
        ],
      });
    } finally {
      transport.close();
    }
  }

  /** The sealed id of the notification at the sink whose sealed message has `subject`. */
  async function sealedIdOf(subject: string, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const notice of sink.messages) {
        const id = /\/m\/([0-9a-f-]{36})/.exec(notice.raw.toString('utf8').replace(/=\r\n/g, ''))?.[1];
        if (!id) continue;
        const response = await fetch(`${sealpost.urls.seal}/v1/sealed/${id}`, {
          headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
        });
        if (response.ok && ((await response.json()) as { subject: string }).subject === subject) return id;
      }
      assert.ok(
        Date.now() < deadline,
        `no notification for "${subject}" within ${timeoutMs} ms (${sink.messages.length} at the sink)`,
      );
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  async function pins(id: string): Promise<Pin[]> {
    const response = await fetch(`${sealpost.urls.seal}/v1/sealed/${id}`, {
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
    });
    return ((await response.json()) as { pins: Pin[] }).pins;
  }

  async function pinsWhen(
    id: string,
    done: (pins: Pin[]) => boolean,
    timeoutMs: number,
  ): Promise<{ pins: Pin[]; ms: number }> {
    const started = Date.now();
    let current = await pins(id);
    while (!done(current) && Date.now() - started < timeoutMs) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      current = await pins(id);
    }
    return { pins: current, ms: Date.now() - started };
  }

  it('seals mail sent by SMTP on the primary, pinned on both clusters within a minute, read as verified', async () => {
    await send('Real IPFS report');
    const id = await sealedIdOf('Real IPFS report');
    const { pins: held, ms } = await pinsWhen(id, (all) => all.every((pin) => pin.status === 'pinned'), 60_000);
    assert.deepEqual(
      held.map((pin) => [pin.cluster, pin.status]),
      [
        [names.primary, 'pinned'],
        [names.secondary, 'pinned'],
      ],
      `pinned on both clusters (after ${ms} ms)`,
    );

    const reader = new Reader(sealpost.urls.auth);
    assert.equal((await reader.get(`/v1/config?messageId=${id}`)).status, 200);
    const asked = await reader.request('POST', '/v1/auth/code', {
      body: { messageId: id, email: ALICE.email, mobile: ALICE.mobile, method: 'sms' },
    });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const verified = await reader.request('POST', '/v1/auth/verify', {
      body: { code: sms.lastCodeTo(ALICE.mobile), rememberMe: false },
    });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    const message = await reader.get('/v1/message');
    assert.equal(message.status, 200);
    assert.equal(message.body.seal.verified, true, 'read back from the real IPFS and verified against its SHA-256');
    assert.match(JSON.stringify(message.body), /Real IPFS report: the figures/);
    assert.deepEqual(
      message.body.seal.pins.map((pin: Pin) => pin.status),
      ['pinned', 'pinned'],
    );
  });

  it("secondary's Kubo stopped during a seal: the seal stands unpinned there, pinned by itself once back", async () => {
    await clusters.secondary.stopKubo();
    let id: string;
    try {
      await send('Secondary outage');
      id = await sealedIdOf('Secondary outage');
      const during = await pins(id);
      assert.equal(during[0]!.status, 'pinned', 'the primary holds it: the seal succeeded');
      assert.ok(['pinning', 'pin_error'].includes(during[1]!.status), JSON.stringify(during[1]));
    } finally {
      await clusters.secondary.startKubo();
    }
    const { pins: healed, ms } = await pinsWhen(id, (all) => all.every((pin) => pin.status === 'pinned'), 90_000);
    assert.deepEqual(
      healed.map((pin) => pin.status),
      ['pinned', 'pinned'],
      `pinned by itself once Kubo is back (after ${ms} ms): ${JSON.stringify(healed)}`,
    );
  });

  it("primary's Kubo stopped: seal service not ready, mail accepted and kept, sealed once Kubo is back", async () => {
    await clusters.primary.stopKubo();
    try {
      let ready = await fetch(`${sealpost.urls.seal}/readyz`);
      for (let i = 0; i < 40 && ready.status === 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        ready = await fetch(`${sealpost.urls.seal}/readyz`);
      }
      assert.equal(ready.status, 503);
      assert.match((await ready.json()).message, /IPFS daemon behind it does not/);
      await send('Primary outage');
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      assert.ok(
        !sink.messages.some((m) => m.raw.toString('utf8').includes('Primary outage')),
        'nothing is sealed while the primary cannot add',
      );
    } finally {
      await clusters.primary.startKubo();
    }
    const id = await sealedIdOf('Primary outage', 120_000);
    const { pins: held } = await pinsWhen(id, (all) => all.every((pin) => pin.status === 'pinned'), 60_000);
    assert.deepEqual(
      held.map((pin) => pin.status),
      ['pinned', 'pinned'],
      'retried by the exchange and sealed: nothing lost',
    );
    assert.equal((await fetch(`${sealpost.urls.seal}/readyz`)).status, 200);
  });

  /** A reader signed in by SMS to message `id` as `who`. */
  async function signedIn(id: string, who: typeof ALICE): Promise<Reader> {
    const reader = new Reader(sealpost.urls.auth);
    assert.equal((await reader.get(`/v1/config?messageId=${id}`)).status, 200);
    const asked = await reader.request('POST', '/v1/auth/code', {
      body: { messageId: id, email: who.email, mobile: who.mobile, method: 'sms' },
    });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const verified = await reader.request('POST', '/v1/auth/verify', {
      body: { code: sms.lastCodeTo(who.mobile), rememberMe: false },
    });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    return reader;
  }

  async function sealed(id: string): Promise<{ cid: string; expiresAt?: string; end?: { reason: string } }> {
    const response = await fetch(`${sealpost.urls.seal}/v1/sealed/${id}`, {
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
    });
    return response.json();
  }

  async function until<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    let value = await probe();
    while (!done(value)) {
      assert.ok(Date.now() < deadline, `${what} within ${timeoutMs} ms: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
      value = await probe();
    }
    return value;
  }

  it('ends a message at its X-Sealpost-Expires: read, then 410; its key destroyed, its pins gone', async () => {
    await send('Short-lived figures', { to: [CAROL], expires: '15s' });
    const id = await sealedIdOf('Short-lived figures');
    const record = await sealed(id);
    assert.ok(record.expiresAt, 'the seal carries its end date');
    const notice = sink.messages
      .find((m) => m.to.includes(CAROL.email))!
      .raw.toString('utf8')
      .replace(/=\r\n/g, '');
    assert.match(notice, /You can read it until/, 'the notification says until when');
    await pinsWhen(id, (all) => all.every((pin) => pin.status === 'pinned'), 60_000);
    const reader = await signedIn(id, CAROL);
    const before = await reader.get('/v1/message');
    assert.equal(before.status, 200, 'readable before its end date');
    assert.match(JSON.stringify(before.body), /Short-lived figures: the figures/);

    // A moment after the end date, whether or not the background pass has run yet.
    const wait = Math.max(0, Date.parse(record.expiresAt!) - Date.now()) + 100;
    await new Promise((resolve) => setTimeout(resolve, wait));
    const after = await reader.get('/v1/message');
    assert.equal(after.status, 410);
    assert.equal(after.body.errorCode, 'message_expired');
    assert.equal(after.body.contact, 'dana@sender.example');
    assert.ok(after.body.endedAt, 'says when it ended');

    assert.equal((await sealed(id)).end?.reason, 'expired');
    // The background pass (SEAL_END_INTERVAL, 500 ms here) destroys the key.
    const db = await openDatabase({ url: database.url, poolSize: 1 });
    try {
      const seal = db.db.withSchema('seal') as Kysely<SealTables>;
      await until(
        'the wrapped key destroyed',
        async () =>
          (
            await seal
              .selectFrom('sealed_messages')
              .select('wrapped_key')
              .where('id', '=', id)
              .executeTakeFirstOrThrow()
          ).wrapped_key,
        (key) => key === null,
      );
    } finally {
      await db.close();
    }
    for (const [name, cluster] of [
      ['primary', clusters.primary],
      ['secondary', clusters.secondary],
    ] as const) {
      await until(
        `the ${name} cluster no longer lists the pin`,
        () => restGet(cluster, `/allocations/${record.cid}`, clusters.ca.cert),
        (answer) => answer.status === 404,
        60_000,
      );
    }
  });

  it("withdrawn for one recipient ends that recipient's open session at once; for all, the content", async () => {
    await send('Sent to the wrong Erin', { to: [DAVE, ERIN] });
    const id = await sealedIdOf('Sent to the wrong Erin');
    const dave = await signedIn(id, DAVE);
    const erin = await signedIn(id, ERIN);
    assert.equal((await erin.get('/v1/message')).status, 200);

    const withdraw = (body: object) =>
      fetch(`${sealpost.urls.seal}/v1/admin/sealed/${id}/withdraw`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    assert.equal((await withdraw({ reason: 'sent to the wrong address', recipient: ERIN.email })).status, 200);
    const gone = await erin.get('/v1/message');
    assert.equal(gone.status, 410, 'the open session of the recipient withdrawn for is refused at its next request');
    assert.equal(gone.body.errorCode, 'message_withdrawn');
    assert.equal((await dave.get('/v1/message')).status, 200, 'the other recipient reads on');

    assert.equal((await withdraw({ reason: 'erasure request' })).status, 200);
    const content = await fetch(`${sealpost.urls.seal}/v1/sealed/${id}/content`, {
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
    });
    assert.equal(content.status, 410);
    assert.equal((await content.json()).errorCode, 'message_withdrawn');
    const last = await dave.get('/v1/message');
    assert.equal(last.status, 410);
    assert.equal(last.body.errorCode, 'message_withdrawn');
  });
});

/**
 * Every copy counts, on two real clusters whose IPFS APIs are on ports of their own (each named by its
 * configuration's ipfsApi): a bit flipped in the primary's block in Kubo's blockstore on disk, the message
 * read verified from the secondary's copy, the scrub reporting the damaged copy; both copies damaged, the
 * seal broken naming both; the secondary's Kubo stopped, its copy missing until it is back.
 */
describe('every copy counts: reads and the scrub against the real IPFS Cluster and Kubo', () => {
  let clusters: RealClusters;
  let seal: Awaited<ReturnType<typeof startSealWithClusters>>;
  let names: { primary: string; secondary: string };
  type Copy = { id: string; cluster: string; state: string; detail: string; repair: string };

  before(async () => {
    clusters = await startRealClusters();
    names = {
      primary: `127.0.0.1:${clusters.primary.restPort}`,
      secondary: `127.0.0.1:${clusters.secondary.restPort}`,
    };
    const cluster = (c: RealClusters['primary']) => ({
      host: '127.0.0.1',
      port: String(c.restPort),
      user: c.user,
      pass: c.pass,
      secure: c.secure,
      timeout: '20s',
      ipfsApi: `http://127.0.0.1:${c.proxyPort}`,
    });
    assert.notEqual(clusters.primary.proxyPort, clusters.secondary.proxyPort);
    seal = await startSealWithClusters([cluster(clusters.primary), cluster(clusters.secondary)], {
      IPFS_CLUSTER_CA_FILE: clusters.ca.certPath,
      SEAL_PIN_CHECK_INTERVAL: '500ms',
      SEAL_REPIN_INTERVAL: '1s',
      SEAL_SCRUB_INTERVAL: '1s',
      SEAL_SCRUB_RATE: '20',
    });
  });

  after(async () => {
    await seal?.stop();
    await clusters?.stop();
  });

  /** Seals a small message (one block) and waits until both clusters hold it. */
  async function sealHeld(body: string): Promise<{ id: string; cid: string; raw: Buffer }> {
    const raw = rawMessage({ body });
    const response = await postSeal(seal, raw);
    assert.equal(response.status, 201, await response.clone().text());
    const { id, cid } = (await response.json()) as { id: string; cid: string };
    const deadline = Date.now() + 60_000;
    for (;;) {
      const record = await fetch(`${seal.url}/v1/sealed/${id}`, {
        headers: { authorization: `Bearer ${seal.serviceToken}` },
      });
      const { pins } = (await record.json()) as { pins: Pin[] };
      if (pins.every((pin) => pin.status === 'pinned')) break;
      assert.ok(Date.now() < deadline, `not pinned on both clusters: ${JSON.stringify(pins)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return { id, cid, raw };
  }

  const read = (id: string) =>
    fetch(`${seal.url}/v1/sealed/${id}/content`, { headers: { authorization: `Bearer ${seal.serviceToken}` } });

  async function copiesWhen(what: string, accept: (copies: Copy[]) => boolean): Promise<Copy[]> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const response = await fetch(`${seal.url}/v1/admin/copies`, {
        headers: { authorization: `Bearer ${seal.adminToken}` },
      });
      assert.equal(response.status, 200);
      const { copies } = (await response.json()) as { copies: Copy[] };
      if (accept(copies)) return copies;
      assert.ok(Date.now() < deadline, `${what}; listed: ${JSON.stringify(copies)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  async function gauge(cluster: string, state: string): Promise<number> {
    const page = await (await fetch(`${seal.metricsUrl}/metrics`)).text();
    const line = page
      .split('\n')
      .find((entry) => entry.startsWith(`seal_scrub_copies{cluster="${cluster}",state="${state}",service="seal"} `));
    return line ? Number(line.split(' ').at(-1)) : 0;
  }

  it("serves the secondary's copy when the primary's block is damaged on disk; the scrub lists it", async () => {
    const { id, cid, raw } = await sealHeld('a copy that rots on the primary');
    await clusters.primary.damageBlock(cid);

    const response = await read(id);
    assert.equal(response.status, 200, await response.clone().text());
    assert.deepEqual(Buffer.from(await response.arrayBuffer()), raw, 'verified, from the second copy');
    const failed = seal.logs.find(
      (line) => line.msg === "this cluster's copy of sealed content failed verification" && line.sealedId === id,
    );
    assert.equal(failed?.cluster, names.primary);

    const copies = await copiesWhen('the damaged copy is listed', (list) =>
      list.some((copy) => copy.id === id && copy.cluster === names.primary),
    );
    assert.deepEqual(
      copies.filter((copy) => copy.id === id).map((copy) => [copy.cluster, copy.state]),
      [[names.primary, 'damaged']],
      "the primary's copy damaged, the secondary's intact",
    );
    const deadline = Date.now() + 15_000;
    while ((await gauge(names.primary, 'damaged')) < 1) {
      assert.ok(Date.now() < deadline, 'seal_scrub_copies counts the damaged copy');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    await clusters.secondary.damageBlock(cid);
    const broken = await read(id);
    assert.equal(broken.status, 502);
    const error = await broken.json();
    assert.equal(error.errorCode, 'seal_broken');
    assert.deepEqual(error.copies, [
      { cluster: names.primary, state: 'damaged' },
      { cluster: names.secondary, state: 'damaged' },
    ]);
  });

  it('reports the copies of a stopped Kubo as missing, and clears them once it is back', async () => {
    const { id } = await sealHeld('a copy on a daemon that stops');
    await clusters.secondary.stopKubo();
    try {
      const copies = await copiesWhen('the missing copy is listed', (list) =>
        list.some((copy) => copy.id === id && copy.cluster === names.secondary),
      );
      const missing = copies.find((copy) => copy.id === id)!;
      assert.equal(missing.state, 'missing');
      assert.match(missing.repair, /recover/);
      assert.equal(copies.filter((copy) => copy.id === id).length, 1, "the primary's copy is intact");
    } finally {
      await clusters.secondary.startKubo();
    }
    await copiesWhen('cleared after the restart', (list) => !list.some((copy) => copy.id === id));
  });
});
