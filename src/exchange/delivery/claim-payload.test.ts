import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { authenticate } from 'mailauth';
import { DkimSigner } from '../../kernel/dkim.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import { RECENT_PAYLOAD_MAX, RecentPayloads } from '../recent-payloads.ts';
import { relayMessage, type RelayOptions } from '../outbound/relay-message.ts';
import type { OpenPayload } from '../outbound/types.ts';
import { claimPayload } from './deliver.ts';
import type { Claim } from './queue.ts';

/** An object store holding one payload, counting the reads it is asked for (streamed and whole alike). */
function storeOf(payload: Buffer) {
  const store = {
    gets: 0,
    async get(): Promise<Readable> {
      store.gets++;
      // Several chunks, as a file or S3 stream gives them.
      const stream = new PassThrough();
      for (let at = 0; at < payload.length; at += 4096) stream.write(payload.subarray(at, at + 4096));
      return stream.end();
    },
    async getBytes(_key: string, max: number): Promise<Buffer | undefined> {
      store.gets++;
      return payload.length > max ? undefined : payload;
    },
  };
  return store;
}

const claimOf = (payload: Buffer) =>
  ({ id: '2c1f4a6e-0b55-4a53-9d39-2f4f4c0c3f10', size: payload.length, payload_key: 'p' }) as Claim;

async function readAll(stream: Readable | Buffer): Promise<Buffer> {
  if (Buffer.isBuffer(stream)) return stream;
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The same payload as a strategy sees it when it cannot be held: streams only. */
const streamedOnly = (open: OpenPayload): OpenPayload => Object.assign(() => open(), { bytes: async () => undefined });

/** 8-bit text, no Date and no Message-ID: everything the relay hop may add or change. */
const message = (bodyLines: number) =>
  Buffer.from(
    [
      'From: Example Org <replies@example.org>',
      'To: erin@rcpt.example',
      'Subject: Greetings',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      ...Array.from({ length: bodyLines }, (_, i) => `Zeile ${i}: Grüße aus Zürich.`),
      '',
    ].join('\r\n'),
  );

describe('the payload of a claim', () => {
  it('reads a small payload from the store once per attempt, however often it is opened', async () => {
    const payload = message(20);
    const store = storeOf(payload);
    const open = claimPayload(claimOf(payload), { objects: store as unknown as ObjectStore });
    assert.deepEqual(await readAll(await open()), payload);
    assert.deepEqual(await readAll(await open()), payload);
    assert.deepEqual(await open.bytes(), payload);
    assert.equal(store.gets, 1);
  });

  it('streams a payload over RECENT_PAYLOAD_MAX from the store at each open and never holds it', async () => {
    const payload = message(Math.ceil(RECENT_PAYLOAD_MAX / 30));
    assert.ok(payload.length > RECENT_PAYLOAD_MAX);
    const store = storeOf(payload);
    const open = claimPayload(claimOf(payload), { objects: store as unknown as ObjectStore });
    assert.equal(await open.bytes(), undefined);
    assert.deepEqual(await readAll(await open()), payload);
    assert.deepEqual(await readAll(await open()), payload);
    assert.equal(store.gets, 2);
  });

  it('streams a payload larger than its envelope says, rather than holding it', async () => {
    const payload = message(Math.ceil(RECENT_PAYLOAD_MAX / 30));
    const store = storeOf(payload);
    const open = claimPayload({ ...claimOf(payload), size: 100 }, { objects: store as unknown as ObjectStore });
    assert.equal(await open.bytes(), undefined);
    assert.deepEqual(await readAll(await open()), payload);
  });

  it('takes the bytes this instance accepted without reading the store', async () => {
    const payload = message(20);
    const store = storeOf(Buffer.from('not these bytes'));
    const recentPayloads = new RecentPayloads(1024 * 1024);
    recentPayloads.remember(claimOf(payload).id, payload);
    const open = claimPayload(claimOf(payload), { objects: store as unknown as ObjectStore, recentPayloads });
    assert.deepEqual(await readAll(await open()), payload);
    assert.equal(store.gets, 0);
  });
});

describe('the bytes the relay receives', () => {
  const envelope = { id: '2c1f4a6e-0b55-4a53-9d39-2f4f4c0c3f10', created_at: new Date('2026-11-24T10:00:00Z') };
  const relayed = async (open: OpenPayload, options: RelayOptions) =>
    readAll(await (await relayMessage(envelope, open, options))());

  for (const sevenBit of [false, true]) {
    it(`are the same from a payload held in memory as from a streamed one, ${sevenBit ? '7' : '8'}-bit`, async () => {
      const payload = message(20);
      const open = claimPayload(claimOf(payload), { objects: storeOf(payload) as unknown as ObjectStore });
      const options = { hostname: 'mx.sealpost.test', sevenBit, longLines: false };
      const held = await relayed(open, options);
      assert.deepEqual(held, await relayed(streamedOnly(open), options));
      const text = held.toString('latin1');
      assert.ok(text.startsWith('Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <2c1f4a6e-'), text);
      assert.equal(/[\x80-\xff]/.test(text), !sevenBit);
    });
  }

  it('are DKIM-signed the same way from a payload held in memory as from a streamed one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-relay-dkim-'));
    try {
      const pair = generateKeyPairSync('ed25519');
      await writeFile(join(dir, 'key.pem'), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
      const dkim = await DkimSigner.load({ domain: 'example.org', selector: 's', keyFile: join(dir, 'key.pem') });
      // RFC 8463 §4.2: p= is the raw 32-byte key, the end of its SubjectPublicKeyInfo.
      const publicKey = pair.publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
      const record = `v=DKIM1; k=ed25519; p=${publicKey.toString('base64')}`;
      const resolver = async (name: string, type: string) => {
        if (type === 'TXT' && name === 's._domainkey.example.org') return [[record]];
        throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
      };
      const payload = message(20);
      const open = claimPayload(claimOf(payload), { objects: storeOf(payload) as unknown as ObjectStore });
      const options = { hostname: 'mx.sealpost.test', sevenBit: false, longLines: false, dkim };
      for (const bytes of [await relayed(open, options), await relayed(streamedOnly(open), options)]) {
        const verdict = await authenticate(bytes, {
          resolver: resolver as never,
          ip: '127.0.0.1',
          helo: 'sealpost.test',
          sender: 'replies@example.org',
          mta: 'sink.test',
          disableArc: true,
        });
        assert.deepEqual(
          verdict.dkim.results.map((r) => `${r.signingDomain}:${r.status.result}`),
          ['example.org:pass'],
        );
        // What follows the signature is what an unsigned relay would get.
        const signed = bytes.toString('latin1');
        const unsigned = (
          await relayed(open, { hostname: 'mx.sealpost.test', sevenBit: false, longLines: false })
        ).toString('latin1');
        assert.ok(signed.startsWith('DKIM-Signature: ') && signed.endsWith(unsigned));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sign what goes out: no Bcc, long lines re-encoded, the same whether held or streamed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-relay-bcc-'));
    try {
      const pair = generateKeyPairSync('ed25519');
      await writeFile(join(dir, 'key.pem'), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
      const dkim = await DkimSigner.load({ domain: 'example.org', selector: 's', keyFile: join(dir, 'key.pem') });
      const publicKey = pair.publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
      const record = `v=DKIM1; k=ed25519; p=${publicKey.toString('base64')}`;
      const resolver = async (name: string, type: string) => {
        if (type === 'TXT' && name === 's._domainkey.example.org') return [[record]];
        throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
      };
      const payload = Buffer.concat([
        Buffer.from('Bcc: hidden@rcpt.example,\r\n other@rcpt.example\r\n'),
        message(20),
        Buffer.from(`${'long '.repeat(300)}\r\n`),
      ]);
      const open = claimPayload(claimOf(payload), { objects: storeOf(payload) as unknown as ObjectStore });
      for (const longLines of [false, true]) {
        const options = { hostname: 'mx.sealpost.test', sevenBit: false, longLines, dkim };
        const held = await relayed(open, options);
        // The streamed path knows of long lines only from the intake's flag.
        const streamed = await relayed(streamedOnly(open), options);
        for (const bytes of longLines ? [held, streamed] : [held]) {
          const text = bytes.toString('latin1');
          assert.doesNotMatch(text, /^bcc:|hidden@|other@/im);
          assert.ok(Math.max(...text.split('\r\n').map((line) => line.length)) <= 998);
          const verdict = await authenticate(bytes, {
            resolver: resolver as never,
            ip: '127.0.0.1',
            helo: 'sealpost.test',
            sender: 'replies@example.org',
            mta: 'sink.test',
            disableArc: true,
          });
          assert.deepEqual(
            verdict.dkim.results.map((r) => `${r.signingDomain}:${r.status.result}`),
            ['example.org:pass'],
          );
        }
        if (longLines) assert.deepEqual(held, streamed);
        else assert.doesNotMatch(streamed.toString('latin1'), /^bcc:|hidden@|other@/im);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
