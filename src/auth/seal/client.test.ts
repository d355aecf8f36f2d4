import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '../../kernel/errors.ts';
import { SealClient, type SealedRecord } from './client.ts';

/**
 * The seal client against a scripted B on 127.0.0.1: each test says how B answers, so that the answers
 * the real B never gives (a record off its schema, an answer cut short, no answer) are covered too.
 */
type Script = (request: IncomingMessage, response: ServerResponse) => void;

const TOKEN = 'client-test-token';
const READER = 'bob@rcpt.example';
const ID = randomUUID();
const RECORD: SealedRecord = {
  id: ID,
  cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
  sha256: 'a'.repeat(64),
  size: 11,
  sender: 'alice@sender.example',
  subject: 'Quarterly report',
  sealedAt: '2026-11-26T10:00:00.000Z',
  recipients: [{ email: 'bob@rcpt.example', method: 'email' }],
  pins: [{ cluster: 'primary', status: 'pinned', attempts: 1, updatedAt: '2026-11-26T10:00:01.000Z' }],
};

function json(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function isError(errorCode: string, status: number, message?: RegExp) {
  return (error: unknown): error is AppError =>
    error instanceof AppError &&
    error.errorCode === errorCode &&
    error.status === status &&
    (!message || message.test(error.message));
}

describe('the seal client (auth → B over keep-alive HTTP)', () => {
  let server: Server;
  let script: Script = () => undefined;
  let client: SealClient;
  const seen: Array<{ url: string; authorization: string | undefined }> = [];
  let connections = 0;

  before(async () => {
    server = createServer((request, response) => {
      seen.push({ url: request.url ?? '', authorization: request.headers.authorization });
      script(request, response);
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    client = new SealClient({
      baseUrl: `http://127.0.0.1:${port}`,
      serviceToken: TOKEN,
      timeoutMs: 1_000,
      maxContentBytes: 1_000,
    });
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('asks with the service token; reads record and content for a reader over one kept-alive connection', async () => {
    script = (request, response) =>
      request.url?.includes('/content?')
        ? response.writeHead(200, { 'content-type': 'message/rfc822', 'content-length': '11' }).end('Hello world')
        : json(response, 200, RECORD);
    seen.length = 0;
    const before = connections;
    assert.deepEqual(await client.sealed(ID), RECORD);
    assert.deepEqual(await client.content(ID, READER), Buffer.from('Hello world'));
    assert.deepEqual(await client.sealed(ID), RECORD);
    assert.deepEqual(
      seen.map((request) => [request.url, request.authorization]),
      [
        [`/v1/sealed/${ID}`, `Bearer ${TOKEN}`],
        [`/v1/sealed/${ID}/content?recipient=bob%40rcpt.example`, `Bearer ${TOKEN}`],
        [`/v1/sealed/${ID}`, `Bearer ${TOKEN}`],
      ],
    );
    assert.equal(connections - before, 1, 'one connection for the three requests');
  });

  it('knows no record for 404 and 400, refuses one off B’s schema or of another id with 502', async () => {
    for (const status of [404, 400]) {
      script = (_request, response) => json(response, status, { errorCode: 'not_found', message: 'no' });
      assert.equal(await client.sealed(ID), undefined);
    }
    for (const record of [
      { ...RECORD, size: '11' },
      { ...RECORD, pins: undefined },
      { ...RECORD, id: randomUUID() },
    ]) {
      script = (_request, response) => json(response, 200, record);
      await assert.rejects(client.sealed(ID), isError('upstream_failed', 502, /unexpected record/));
    }
    script = (_request, response) => response.writeHead(200).end('{"id":');
    await assert.rejects(client.sealed(ID), isError('upstream_failed', 502, /unexpected record/));
  });

  it('takes the seal from B’s X-Sealpost-Seal header, when it decodes, fits and names this message', async () => {
    const facts = { id: ID, cid: RECORD.cid, sha256: RECORD.sha256, sealedAt: RECORD.sealedAt, pins: [] };
    const header = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const answer = (seal: string | undefined) => (_request: IncomingMessage, response: ServerResponse) =>
      response
        .writeHead(200, { 'content-length': '11', ...(seal === undefined ? {} : { 'x-sealpost-seal': seal }) })
        .end('Hello world');
    script = answer(header(facts));
    assert.deepEqual(await client.read(ID, READER), { content: Buffer.from('Hello world'), seal: facts });
    for (const seal of [
      undefined,
      'not base64url JSON',
      header({ ...facts, pins: undefined }),
      header({ ...facts, id: randomUUID() }),
    ]) {
      script = answer(seal);
      assert.deepEqual(await client.read(ID, READER), { content: Buffer.from('Hello world'), seal: undefined });
    }
  });

  it('refuses content cut short of its Content-Length, instead of returning fewer bytes', async () => {
    script = (_request, response) => {
      response.writeHead(200, { 'content-type': 'message/rfc822', 'content-length': '500' });
      response.write('only the first part', () => response.socket?.destroy());
    };
    await assert.rejects(client.content(ID, READER), isError('upstream_failed', 502, /broke off/));
  });

  it('refuses content above maxContentBytes, announced or not', async () => {
    script = (_request, response) =>
      response.writeHead(200, { 'content-type': 'message/rfc822', 'content-length': '1001' }).end('x'.repeat(1001));
    await assert.rejects(
      client.content(ID, READER),
      isError('upstream_failed', 502, /larger than SEAL_MAX_MESSAGE_SIZE/),
    );
    script = (_request, response) => {
      response.writeHead(200, { 'content-type': 'message/rfc822' });
      response.end('x'.repeat(1001));
    };
    await assert.rejects(
      client.content(ID, READER),
      isError('upstream_failed', 502, /larger than SEAL_MAX_MESSAGE_SIZE/),
    );
  });

  it('passes on a broken seal as seal_broken, a gone message as not_found, the rest as upstream_failed', async () => {
    script = (_request, response) => json(response, 502, { errorCode: 'seal_broken', message: 'failed verification' });
    await assert.rejects(
      client.content(ID, READER),
      (error) => isError('seal_broken', 502)(error) && !('cid' in error.details),
    );
    script = (_request, response) =>
      json(response, 502, { errorCode: 'seal_broken', message: 'failed verification', cid: RECORD.cid });
    await assert.rejects(
      client.content(ID, READER),
      (error) => isError('seal_broken', 502, /IPFS CID/)(error) && error.details.cid === RECORD.cid,
    );
    // Each copy's state is passed on for the reader page, and only what B's schema allows.
    script = (_request, response) =>
      json(response, 502, {
        errorCode: 'seal_broken',
        message: 'no copy verifies',
        cid: RECORD.cid,
        copies: [
          { cluster: 'primary', state: 'damaged' },
          { cluster: 'second', state: 'unreachable' },
          { cluster: 'third', state: 'on fire' },
          { cluster: 42, state: 'missing' },
        ],
      });
    await assert.rejects(
      client.content(ID, READER),
      (error) =>
        isError('seal_broken', 502)(error) &&
        error.details.cid === RECORD.cid &&
        JSON.stringify(error.details.copies) ===
          JSON.stringify([
            { cluster: 'primary', state: 'damaged' },
            { cluster: 'second', state: 'unreachable' },
          ]),
    );
    script = (_request, response) => json(response, 404, { errorCode: 'not_found', message: 'gone' });
    await assert.rejects(client.content(ID, READER), isError('not_found', 404));
    script = (_request, response) => json(response, 503, { errorCode: 'unavailable', message: 'no cluster' });
    await assert.rejects(client.content(ID, READER), isError('upstream_failed', 502, /could not read and verify/));
    script = (_request, response) => response.writeHead(302, { location: '/elsewhere' }).end();
    await assert.rejects(client.content(ID, READER), isError('upstream_failed', 502));
  });

  it('gives up with 502 when B does not answer within its time limit', async () => {
    script = () => undefined; // never answers
    await assert.rejects(client.sealed(ID), isError('upstream_failed', 502, /not reachable/));
    script = (_request, response) => {
      response.writeHead(200, { 'content-type': 'message/rfc822', 'content-length': '100' });
      response.write('the start, then nothing');
    };
    await assert.rejects(client.content(ID, READER), isError('upstream_failed', 502, /broke off/));
  });

  it('passes on a 410 of an ended message with its errorCode, endedAt and contact, from every read', async () => {
    const endedAt = '2026-12-01T09:00:00.000Z';
    for (const errorCode of ['message_expired', 'message_withdrawn']) {
      script = (_request, response) =>
        json(response, 410, { errorCode, message: 'ended', endedAt, contact: RECORD.sender, extra: 'not passed on' });
      const ended = (error: unknown) =>
        isError(errorCode, 410)(error) &&
        JSON.stringify(error.details) === JSON.stringify({ endedAt, contact: RECORD.sender });
      await assert.rejects(client.content(ID, READER), ended);
      await assert.rejects(client.contentStream(ID, READER), ended);
      await assert.rejects(client.recipient(ID, READER), ended);
    }
    // A 410 that does not say how it ended: a message no longer there.
    script = (_request, response) => json(response, 410, { errorCode: 'gone', message: 'gone' });
    await assert.rejects(client.content(ID, READER), isError('not_found', 404));
  });

  it('asks B for one recipient (cheap): the record, undefined when none, 410 when withdrawn for them', async () => {
    seen.length = 0;
    const recipient = { email: READER, method: 'email' };
    script = (_request, response) => json(response, 200, recipient);
    assert.deepEqual(await client.recipient(ID, READER), recipient);
    assert.equal(seen.at(-1)?.url, `/v1/sealed/${ID}/recipients/bob%40rcpt.example`);
    script = (_request, response) => json(response, 404, { errorCode: 'not_found', message: 'no' });
    assert.equal(await client.recipient(ID, READER), undefined);
    // A B that tells the withdrawal in its 200 rather than with a 410: ended all the same.
    script = (_request, response) => json(response, 200, { ...recipient, withdrawnAt: '2026-12-01T09:00:00.000Z' });
    await assert.rejects(client.recipient(ID, READER), isError('message_withdrawn', 410));
    script = (_request, response) => json(response, 200, { email: READER });
    await assert.rejects(client.recipient(ID, READER), isError('upstream_failed', 502, /unexpected recipient/));
  });

  it('asks which messages ended with POST /v1/sealed/ended and checks the answer against B’s schema', async () => {
    const other = randomUUID();
    const bodies: unknown[] = [];
    const ended = [{ id: ID, end: { reason: 'withdrawn', at: '2026-12-01T09:00:00.000Z' } }];
    script = (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        bodies.push({ method: request.method, url: request.url, body: JSON.parse(Buffer.concat(chunks).toString()) });
        json(response, 200, { ended });
      });
    };
    assert.deepEqual(await client.ended([ID, other]), ended);
    assert.deepEqual(bodies, [{ method: 'POST', url: '/v1/sealed/ended', body: { ids: [ID, other] } }]);
    assert.deepEqual(await client.ended([]), [], 'nothing asked about: no request');
    assert.equal(bodies.length, 1);
    script = (_request, response) => json(response, 200, { ended: [{ id: ID }] });
    await assert.rejects(client.ended([ID]), isError('upstream_failed', 502, /unexpected list of ended/));
  });
});
