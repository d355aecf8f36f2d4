import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { payloadKey } from '../../src/exchange/handoff.ts';
import { exchangeService } from '../../src/exchange/service.ts';
import { exchangeDb } from './exchange-delivery.ts';
import { startServiceForTest, type ServiceUnderTest } from './services.ts';
import { SmtpTalk } from './smtp-talk.ts';

/**
 * The exchange engine as the fuzz and security tests use it: objects on local disk (fast, and the same
 * ObjectStore interface), delivery workers idle (SEAL_URL nowhere, a 1 h poll) so that every envelope the
 * intake writes stays where the test can count it, and catch-all rules for both channels.
 */
export async function startQuietExchange(env: Record<string, string> = {}): Promise<ServiceUnderTest> {
  const exchange = await startServiceForTest(exchangeService, {
    env: { DELIVERY_ENABLED: 'false', SEAL_URL: 'http://127.0.0.1:9', ...env },
  });
  try {
    for (const channel of ['smtp', 'json']) {
      const response = await fetch(`${exchange.url}/v1/config`, {
        method: 'POST',
        headers: { authorization: `Bearer ${exchange.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `catch-all ${channel}`,
          priority: 1000,
          configuration: { params: { channel }, outbound: ['smtp'] },
        }),
      });
      assert.equal(response.status, 201, await response.text());
    }
  } catch (error) {
    await exchange.stop();
    throw error;
  }
  return exchange;
}

export const exchangeSmtpPort = (exchange: ServiceUnderTest) => Number(new URL(exchange.service.listening.smtp!).port);

/** Envelope ids in the database and payload ids in the object store. */
export async function storedMessages(exchange: ServiceUnderTest): Promise<{ envelopes: string[]; payloads: string[] }> {
  const rows = await exchangeDb(exchange).selectFrom('envelopes').select('id').execute();
  const payloads: string[] = [];
  for await (const object of exchange.objects.list('exchange/payloads/'))
    payloads.push(object.key.slice('exchange/payloads/'.length));
  return { envelopes: rows.map((row) => row.id).sort(), payloads: payloads.sort() };
}

/**
 * No partial state: exactly the acknowledged messages have an envelope row and a payload. Polls for a
 * while, because a transfer the client cut off is cleaned up by the server after the client has gone.
 */
export async function assertStoredExactly(
  exchange: ServiceUnderTest,
  acknowledged: Iterable<string>,
  context = '',
): Promise<void> {
  const expected = [...new Set(acknowledged)].sort();
  let last: { envelopes: string[]; payloads: string[] } | undefined;
  for (let i = 0; i < 100; i++) {
    last = await storedMessages(exchange);
    if (
      JSON.stringify(last.envelopes) === JSON.stringify(expected) &&
      JSON.stringify(last.payloads) === JSON.stringify(expected)
    )
      return;
    await sleep(30);
  }
  const extra = (list: string[]) => list.filter((id) => !expected.includes(id));
  const missing = (list: string[]) => expected.filter((id) => !list.includes(id));
  assert.fail(
    `stored messages differ from the acknowledged ones${context ? ` (${context})` : ''}: ` +
      JSON.stringify({
        envelopesNotAcknowledged: extra(last!.envelopes),
        acknowledgedWithoutEnvelope: missing(last!.envelopes),
        payloadsNotAcknowledged: extra(last!.payloads),
        acknowledgedWithoutPayload: missing(last!.payloads),
      }),
  );
}

/** Reads a stored payload whole. */
export async function readPayload(exchange: ServiceUnderTest, envelopeId: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await exchange.objects.get(payloadKey(envelopeId))) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Strips our Received header (with its folded lines) from the front of a payload stored from SMTP. */
export function withoutReceived(stored: Buffer): Buffer {
  const text = stored.toString('latin1');
  assert.ok(text.startsWith('Received: '), 'the payload starts with our Received header');
  let end = text.indexOf('\r\n');
  while (text[end + 2] === '\t' || text[end + 2] === ' ') end = text.indexOf('\r\n', end + 2);
  return stored.subarray(end + 2);
}

/** `250 2.6.0 Ok: queued as <id>` → id. */
export function queuedId(reply: string): string | undefined {
  return /^250[ -].*queued as ([0-9a-f-]{36})/m.exec(reply)?.[1];
}

/**
 * SMTP dot-stuffing (RFC 5321 4.5.2) of a message, with the end-of-data line after it. smtp-server takes
 * a dot after any LF as a line start (bare LFs included), so that is where dots are doubled. The server
 * stores what came before the end-of-data line with its CRLF, every line end made CRLF: `storedAs` is
 * what it should keep.
 */
export function dotStuffed(message: Buffer): Buffer {
  const text = message.toString('latin1').replace(/(^|\n)\./g, '$1..');
  return Buffer.from(`${text}${text.endsWith('\r\n') ? '' : '\r\n'}.\r\n`, 'latin1');
}

export function storedAs(message: Buffer): Buffer {
  return withCrlf(
    message.subarray(-2).toString('latin1') === '\r\n' ? message : Buffer.concat([message, Buffer.from('\r\n')]),
  );
}

/**
 * docs/decisions.md#line-ends: bare LF and bare CR stored as CRLF (written independently of the intake's
 * code).
 */
export function withCrlf(message: Buffer): Buffer {
  return Buffer.from(message.toString('latin1').replace(/\r\n|\r|\n/g, '\r\n'), 'latin1');
}

/**
 * One ordinary message over a fresh connection; returns the final reply. The proof, after a fuzz block,
 * that the server still serves mail.
 */
export async function sendOrdinaryMessage(port: number, message?: Buffer): Promise<string> {
  const body =
    message ?? Buffer.from('From: a@example.com\r\nTo: b@example.com\r\nSubject: still here\r\n\r\nHello.\r\n');
  const { talk, greeting } = await SmtpTalk.open(port);
  try {
    assert.match(greeting, /^220 /);
    assert.match(await talk.send('EHLO ordinary.test'), /^250[ -]/);
    assert.match(await talk.send('MAIL FROM:<a@example.com>'), /^250 /);
    assert.match(await talk.send('RCPT TO:<b@example.com>'), /^250 /);
    assert.match(await talk.send('DATA'), /^354 /);
    talk.write(dotStuffed(body));
    return await talk.reply();
  } finally {
    talk.close();
  }
}
