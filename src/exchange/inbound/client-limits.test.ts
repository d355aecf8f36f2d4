import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type AuthDoor, startAuthDoor } from '../../../test/support/auth-door.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { createLogger } from '../../kernel/logger.ts';
import { createExchangeMetrics } from '../metrics.ts';
import { AUTH_FAILURE_MEMORY, ClientLimits } from './client-limits.ts';
import { startInboundSmtpServer, type InboundSmtpServer } from './smtp-server.ts';
import {
  envelopeCount,
  eventually,
  exchangeDb,
  intakeFor,
  metric,
  payloadCount,
} from '../../../test/support/exchange-delivery.ts';
import type { ServiceUnderTest } from '../../../test/support/services.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';
import type { TestCertificate } from '../../../test/support/tls.ts';

const HOST = 'mx.limits.test';
const RELAY = { user: 'relay', pass: 'relay-password' };
const plain = (user: string, pass: string) => Buffer.from(`\0${user}\0${pass}`).toString('base64');

describe('the per-client counts', () => {
  it('count an IPv6 client by its /64 and an IPv4-mapped one as IPv4; a closed connection frees its place', () => {
    const limits = new ClientLimits({ connections: 2, rate: undefined, authFailures: AUTH_FAILURE_MEMORY });
    assert.equal(limits.admit('a', '2001:db8:1:2::10', false), undefined);
    assert.equal(limits.admit('b', '2001:db8:1:2:ffff::1', false), undefined);
    assert.equal(limits.admit('c', '2001:db8:1:2::99', false), 'client_connections', 'the same /64');
    assert.equal(limits.admit('d', '2001:db8:1:3::1', false), undefined, 'another /64');
    limits.release('c'); // refused: it held no place
    assert.equal(limits.admit('e', '2001:db8:1:2::99', false), 'client_connections');
    limits.release('a');
    assert.equal(limits.admit('f', '2001:db8:1:2::99', false), undefined);
    assert.equal(limits.admit('g', '::ffff:192.0.2.1', false), undefined);
    assert.equal(limits.admit('h', '192.0.2.1', false), undefined);
    assert.equal(limits.admit('i', '192.0.2.1', false), 'client_connections', 'IPv4-mapped is the IPv4 address');
    for (let i = 0; i < 5; i++) assert.equal(limits.admit(`allowed-${i}`, '10.0.0.1', true), undefined);
  });
});

describe('the SMTP door: limits per client (Postfix anvil)', () => {
  let door: AuthDoor;
  let cert: TestCertificate;
  let exchange: ServiceUnderTest;
  let port: number;

  before(async () => {
    // Cost 4: the tests here are about counting, not hashing.
    door = await startAuthDoor({
      account: { user: RELAY.user, pass: RELAY.pass, cost: 4 },
      env: {
        LOG_LEVEL: 'info',
        INBOUND_SMTP_CLIENT_CONNECTIONS: '2',
        INBOUND_SMTP_CLIENT_RATE: '6/1m',
        INBOUND_SMTP_MIN_DATA_RATE: '1KiB/1s',
        SMTP_HOSTNAME: HOST,
      },
    });
    ({ exchange, port, cert } = door);
  });
  after(async () => {
    await door?.stop();
  });

  async function open(from: string, serverPort = port) {
    return SmtpTalk.open(serverPort, '127.0.0.1', from);
  }

  it('refuses a third simultaneous connection from one address with 421 4.7.0; others are not held to it', async () => {
    const refused = await metric(exchange, 'smtp_refused_total', { reason: 'client_connections' });
    const talks: SmtpTalk[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const { talk, greeting } = await open('127.0.0.2');
        talks.push(talk);
        assert.match(greeting, /^220 /);
      }
      const third = await open('127.0.0.2');
      talks.push(third.talk);
      assert.equal(third.greeting, `421 4.7.0 ${HOST} Error: too many connections from 127.0.0.2; try again later`);
      await third.talk.closedByServer();
      // Another address, and the allowed network (one Postfix in front for everyone) get in.
      const other = await open('127.0.0.3');
      talks.push(other.talk);
      assert.match(other.greeting, /^220 /);
      for (let i = 0; i < 3; i++) {
        const allowed = await open('127.0.0.1');
        talks.push(allowed.talk);
        assert.match(allowed.greeting, /^220 /, 'INBOUND_SMTP_ALLOWED_NETWORKS is not limited per client');
      }
      // A connection that closes frees its place (once the server has seen it close).
      talks[0]!.close();
      await sleep(300);
      const again = await open('127.0.0.2');
      talks.push(again.talk);
      assert.match(again.greeting, /^220 /);
    } finally {
      for (const talk of talks) talk.close();
    }
    assert.equal(await metric(exchange, 'smtp_refused_total', { reason: 'client_connections' }), refused + 1);
  });

  it('refuses the seventh connection within the period from one address with 421 4.7.0, counted', async () => {
    const refused = await metric(exchange, 'smtp_refused_total', { reason: 'client_rate' });
    for (let i = 0; i < 6; i++) {
      const { talk, greeting } = await open('127.0.0.4');
      talk.close();
      assert.match(greeting, /^220 /, `connection ${i + 1}`);
    }
    const { talk, greeting } = await open('127.0.0.4');
    talk.close();
    assert.equal(greeting, `421 4.7.0 ${HOST} Error: too many new connections from 127.0.0.4; try again later`);
    const other = await open('127.0.0.5');
    other.talk.close();
    assert.match(other.greeting, /^220 /);
    assert.equal(await metric(exchange, 'smtp_refused_total', { reason: 'client_rate' }), refused + 1);
  });

  describe('AUTH failures remembered per address', () => {
    let server: InboundSmtpServer;
    let serverPort: number;
    const registry = new Registry();
    const metrics = createExchangeMetrics(registry);
    const refusals = async (reason: string) =>
      (await metrics.smtpRefused.get()).values.find((value) => value.labels.reason === reason)?.value ?? 0;

    before(async () => {
      // A door of its own with the memory's numbers shortened: 3 failures, replies 200 ms later per failure.
      server = await startInboundSmtpServer({
        config: exchange.config,
        settings: { ...exchange.config.exchange, smtpPort: 0 },
        intake: intakeFor(exchange),
        metrics,
        logger: createLogger({ level: 'silent' }),
        authFailureMemory: { failures: 3, windowMs: 60_000, refuseMs: 60_000, delayStepMs: 200, maxDelayMs: 400 },
      });
      serverPort = Number(new URL(server.url).port);
    });
    after(() => server?.close());

    /** Connects from `from`, STARTTLS, EHLO: ready for AUTH. */
    async function secured(from: string) {
      const { talk, greeting } = await open(from, serverPort);
      assert.match(greeting, /^220 /);
      await talk.send('EHLO client.example');
      assert.match(await talk.startTls(cert.cert), /^220 /);
      await talk.send('EHLO client.example');
      return talk;
    }
    async function timed(talk: SmtpTalk, line: string): Promise<{ reply: string; ms: number }> {
      const started = performance.now();
      const reply = await talk.send(line);
      return { reply, ms: performance.now() - started };
    }

    it('answers later at each failure, then refuses the address at AUTH and at connect; others get in', async () => {
      const first = await secured('127.0.0.6');
      const failures = [
        await timed(first, `AUTH PLAIN ${plain(RELAY.user, 'wrong-1')}`),
        await timed(first, `AUTH PLAIN ${plain('nobody', 'wrong-2')}`),
      ];
      first.close();
      const second = await secured('127.0.0.6');
      failures.push(await timed(second, `AUTH PLAIN ${plain(RELAY.user, 'wrong-3')}`));
      for (const { reply } of failures) assert.equal(reply, '535 5.7.8 Authentication credentials invalid');
      assert.ok(failures[1]!.ms >= 190 && failures[2]!.ms >= 390, `growing delays: ${failures.map((f) => f.ms)}`);
      // The right password no longer helps: the address is refused for a while.
      assert.equal(
        await second.send(`AUTH PLAIN ${plain(RELAY.user, RELAY.pass)}`),
        `421 4.7.0 ${HOST} Error: too many failed authentication attempts from 127.0.0.6; try again later`,
      );
      await second.closedByServer();
      const third = await open('127.0.0.6', serverPort);
      third.talk.close();
      assert.equal(
        third.greeting,
        `421 4.7.0 ${HOST} Error: too many failed authentication attempts from 127.0.0.6; try again later`,
      );

      const other = await secured('127.0.0.7');
      try {
        assert.match(await other.send(`AUTH PLAIN ${plain(RELAY.user, RELAY.pass)}`), /^235 /);
      } finally {
        other.close();
      }
      assert.equal(await refusals('auth_failures'), 2);
      assert.equal(await refusals('auth_failed'), 3);
    });

    it('still takes mail from an allowed client that failed AUTH too often, but no more AUTH from it', async () => {
      const talk = await secured('127.0.0.1');
      try {
        for (let i = 0; i < 3; i++) assert.match(await talk.send(`AUTH PLAIN ${plain('nobody', `x${i}`)}`), /^535 /);
        assert.match(await talk.send(`AUTH PLAIN ${plain(RELAY.user, RELAY.pass)}`), /^421 4\.7\.0 /);
      } finally {
        talk.close();
      }
      const again = await open('127.0.0.1', serverPort);
      try {
        assert.match(again.greeting, /^220 /);
        await again.talk.send('EHLO mta.example');
        assert.match(await again.talk.send('MAIL FROM:<alice@example.com>'), /^250 /);
      } finally {
        again.talk.close();
      }
    });
  });

  describe('the least data rate (INBOUND_SMTP_MIN_DATA_RATE=1KiB/1s)', () => {
    async function startData(talk: SmtpTalk) {
      await talk.send('EHLO mta.example');
      assert.match(await talk.send('MAIL FROM:<alice@example.com>'), /^250 /);
      assert.match(await talk.send('RCPT TO:<bob@example.com>'), /^250 /);
      assert.match(await talk.send('DATA'), /^354 /);
    }

    it('cuts a client dripping its message with 421 4.4.2 and keeps nothing of it', async () => {
      const db = exchangeDb(exchange);
      const [envelopes, payloads] = [await envelopeCount(db), await payloadCount(exchange.objects)];
      const refused = await metric(exchange, 'smtp_refused_total', { reason: 'slow_data' });
      const { talk } = await open('127.0.0.1');
      const started = Date.now();
      let dripping = true;
      try {
        await startData(talk);
        talk.write('Subject: drip\r\n\r\n');
        const drip = (async () => {
          // A byte every 100 ms: 10 bytes a second, far below 1 KiB; bounded to 10 s whatever happens.
          for (let i = 0; dripping && i < 100; i++) {
            talk.write('x');
            await sleep(100);
          }
        })();
        // Bounded: without the limit the client would be left dripping, and the test would say so here.
        const reply = await Promise.race([talk.reply(), sleep(6_000).then(() => 'no reply within 6 s')]);
        dripping = false;
        await drip;
        assert.equal(reply, `421 4.4.2 ${HOST} Error: the message arrives too slowly; closing the connection`);
        const seconds = (Date.now() - started) / 1000;
        assert.ok(seconds >= 0.9 && seconds < 4, `cut after the 1 s grace, not later: ${seconds} s`);
        await talk.closedByServer();
      } finally {
        dripping = false;
        talk.close();
      }
      assert.equal(await metric(exchange, 'smtp_refused_total', { reason: 'slow_data' }), refused + 1);
      // The upload was cut: no envelope, and no payload once the intake has cleaned up.
      assert.equal(await envelopeCount(db), envelopes);
      await eventually(
        'no payload left',
        () => payloadCount(exchange.objects),
        (count) => count === payloads,
      );
      assert.ok(exchange.logs.some((line) => String(line.msg).includes('slower than INBOUND_SMTP_MIN_DATA_RATE')));
    });

    it('takes a message that comes at once, and one that takes longer than the grace at a fair rate', async () => {
      const { talk } = await open('127.0.0.1');
      try {
        await startData(talk);
        talk.write('Subject: at once\r\n\r\nhello\r\n.\r\n');
        assert.match(await talk.reply(), /^250 2\.6\.0 /);
        assert.match(await talk.send('MAIL FROM:<alice@example.com>'), /^250 /);
        assert.match(await talk.send('RCPT TO:<bob@example.com>'), /^250 /);
        assert.match(await talk.send('DATA'), /^354 /);
        talk.write('Subject: steady\r\n\r\n');
        // 2.5 s at 4 KiB a second: over the grace, above the rate.
        const line = `${'y'.repeat(1022)}\r\n`;
        for (let i = 0; i < 10; i++) {
          talk.write(line);
          await sleep(250);
        }
        talk.write('.\r\n');
        assert.match(await talk.reply(), /^250 2\.6\.0 /);
      } finally {
        talk.close();
      }
    });
  });
});
