import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { signInAlice, startAuthHarness, type AuthHarness } from '../support/auth-harness.ts';
import type { Reader } from '../support/auth-reader.ts';
import { assertErrorObject, fuzz } from '../support/fuzz.ts';
import { uploadFile } from '../support/multipart-upload.ts';

/** Small limits, so that some generated uploads pass them. */
const MAX_FILE = 16 * 1024;

// ---- Malformed multipart: truncated and wrong boundaries, huge and many part headers, many parts,
// no file part, files without names, bodies cut off mid-way. ----

const eol = fc.constantFrom('\r\n', '\r\n', '\r\n', '\n');
const boundary = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/),
  fc.constantFrom('-', '--', 'a b', 'x'.repeat(71), 'x'.repeat(5000)),
);
const filename = fc.oneof(
  fc.constantFrom(
    'a.txt',
    'report.pdf',
    '',
    '../../etc/passwd',
    'C:\\x\\y.txt',
    'setup.exe',
    'a"b.txt',
    'ä ö.txt',
    '.',
    '..',
    'x'.repeat(1000),
  ),
  fc.string({ maxLength: 60 }),
);
const disposition = fc.oneof(
  filename.map((name) => `Content-Disposition: form-data; name="file"; filename="${name}"`),
  filename.map((name) => `Content-Disposition: form-data; name="file"; filename*=UTF-8''${encodeURIComponent(name)}`),
  fc.constantFrom(
    'Content-Disposition: form-data; name="file"',
    'Content-Disposition: form-data; name="text"',
    'Content-Disposition: attachment',
    'Content-Disposition: form-data',
    'Content-Disposition:',
    'Content-Disposition: form-data; name="file"; filename',
  ),
  fc.string({ maxLength: 80 }).map((text) => `Content-Disposition: ${text}`),
);
const partHeaders = fc
  .tuple(
    fc.option(disposition, { freq: 8, nil: undefined }),
    fc.option(
      fc.constantFrom(
        'Content-Type: text/plain',
        'Content-Type: application/octet-stream',
        'Content-Type: ',
        'Content-Type: multipart/mixed; boundary=x',
      ),
      { nil: undefined },
    ),
    fc.oneof(
      { weight: 6, arbitrary: fc.constant<string[]>([]) },
      { weight: 1, arbitrary: fc.integer({ min: 1000, max: 120_000 }).map((n) => [`X-Huge: ${'h'.repeat(n)}`]) },
      {
        weight: 1,
        arbitrary: fc.integer({ min: 10, max: 400 }).map((n) => Array.from({ length: n }, (_, i) => `X-Many-${i}: v`)),
      },
      { weight: 1, arbitrary: fc.array(fc.string({ unit: 'binary', maxLength: 60 }), { maxLength: 3 }) },
    ),
  )
  .map(([first, type, extra]) => [first, type, ...extra].filter((line): line is string => line !== undefined));
const content = fc.oneof(
  fc.uint8Array({ maxLength: 3000 }).map((bytes) => Buffer.from(bytes)),
  fc.string({ maxLength: 300 }).map((text) => Buffer.from(text)),
  fc.integer({ min: MAX_FILE - 10, max: MAX_FILE + 100 }).map((n) => Buffer.alloc(n, 'z')),
  fc.constantFrom(Buffer.from('MZ\x90\x00\x03'), Buffer.from('%PDF-1.4\n%%EOF\n'), Buffer.from('#!/bin/sh\necho\n')),
);
const part = fc.record({ headers: partHeaders, content, end: eol });

interface Upload {
  headerBoundary: string | undefined;
  bodyBoundary: string;
  quoted: boolean;
  preamble: Buffer;
  parts: Array<{ headers: string[]; content: Buffer; end: string }>;
  closing: 'closed' | 'none' | 'truncated' | 'epilogue';
  /** Sent whole (content-length or chunked), or cut off after some bytes with the connection closed. */
  delivery: { kind: 'whole'; chunked: boolean } | { kind: 'cut'; at: number };
}

const upload: fc.Arbitrary<Upload> = fc
  .record({
    bodyBoundary: boundary,
    headerChoice: fc.constantFrom('same', 'same', 'same', 'same', 'missing', 'other'),
    other: boundary,
    quoted: fc.boolean(),
    preamble: fc.constantFrom(Buffer.alloc(0), Buffer.alloc(0), Buffer.from('preamble\r\n'), Buffer.from('\r\n')),
    parts: fc.oneof(
      { weight: 5, arbitrary: fc.array(part, { maxLength: 3 }) },
      { weight: 1, arbitrary: fc.array(part, { minLength: 10, maxLength: 40 }) },
    ),
    closing: fc.constantFrom<Upload['closing']>('closed', 'closed', 'closed', 'none', 'truncated', 'epilogue'),
    delivery: fc.oneof(
      { weight: 4, arbitrary: fc.boolean().map((chunked) => ({ kind: 'whole' as const, chunked })) },
      { weight: 1, arbitrary: fc.nat().map((at) => ({ kind: 'cut' as const, at })) },
    ),
  })
  .map(({ bodyBoundary, headerChoice, other, ...rest }) => ({
    ...rest,
    bodyBoundary,
    headerBoundary: headerChoice === 'same' ? bodyBoundary : headerChoice === 'other' ? other : undefined,
  }));

function multipartBody(plan: Upload): Buffer {
  const b = plan.bodyBoundary;
  const tail = {
    closed: `--${b}--\r\n`,
    none: '',
    truncated: `--${b}-`,
    epilogue: `--${b}--\r\ntrailing garbage --${b}\r\n`,
  }[plan.closing];
  return Buffer.concat([
    plan.preamble,
    ...plan.parts.flatMap(({ headers, content: bytes, end }) => [
      Buffer.from(`--${b}${end}${headers.map((h) => h + end).join('')}${end}`, 'latin1'),
      bytes,
      Buffer.from(end),
    ]),
    Buffer.from(tail),
  ]);
}

interface Answer {
  status: number;
  body: unknown;
}

/** Sends one upload as planned; undefined when the connection was cut before an answer (as planned). */
async function send(url: URL, reader: Reader, plan: Upload): Promise<Answer | undefined> {
  const body = multipartBody(plan);
  const type =
    plan.headerBoundary === undefined
      ? 'multipart/form-data'
      : `multipart/form-data; boundary=${plan.quoted ? `"${plan.headerBoundary}"` : plan.headerBoundary}`;
  const headers: Record<string, string> = {
    'content-type': type,
    cookie: reader.cookie!,
    'x-csrf-token': reader.csrf!,
    accept: 'application/json',
  };

  if (plan.delivery.kind === 'cut') {
    // A raw connection: the request head announces the whole body, a part of it is sent, then the client goes.
    const socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    const head = [
      `POST ${url.pathname} HTTP/1.1`,
      `Host: ${url.host}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      `Content-Length: ${body.length}`,
      'Connection: close',
      '',
      '',
    ].join('\r\n');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.write(head);
    socket.end(body.subarray(0, plan.delivery.at % (body.length + 1)));
    await Promise.race([
      new Promise((resolve) => socket.once('close', resolve)),
      sleep(10_000, undefined, { ref: false }),
    ]);
    socket.destroy();
    // The first answer on the connection (nothing may follow it, but that is not this test's to judge).
    const match = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(received);
    if (!match) return undefined;
    const length = /^content-length: *(\d+)$/im.exec(match[2]!);
    const text = length
      ? match[3]!.slice(0, Number(length[1]))
      : /^transfer-encoding: chunked$/im.test(match[2]!)
        ? dechunk(match[3]!)
        : match[3]!;
    return { status: Number(match[1]), body: parseJson(text) };
  }

  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers:
        plan.delivery.kind === 'whole' && plan.delivery.chunked
          ? headers
          : { ...headers, 'content-length': String(body.length) },
      agent: false,
      // Above the service's 10 s stall limit (src/auth/replies/files-routes.ts), which a stalled form waits out.
      timeout: 20_000,
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 20 s')));
    req.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body: parseJson(Buffer.concat(chunks).toString('utf8')) }),
      );
      response.on('error', reject);
    });
    // The server may answer (and close) before it has read everything: that answer counts.
    req.on('error', (error) => reject(error));
    req.end(body);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function dechunk(text: string): string {
  let out = '';
  for (let rest = text; ; ) {
    const match = /^([0-9a-f]+)\r\n/i.exec(rest);
    if (!match) return out;
    const size = parseInt(match[1]!, 16);
    if (size === 0) return out;
    out += rest.slice(match[0].length, match[0].length + size);
    rest = rest.slice(match[0].length + size + 2);
  }
}

describe('fuzzing POST /v1/message/files with malformed multipart uploads', { timeout: 180_000 }, () => {
  let harness: AuthHarness;
  let alice: Reader;
  /** Files the service answered 201 for and that were not deleted since. */
  const kept = new Set<string>();

  const storedFileIds = async () => {
    const ids: string[] = [];
    for await (const object of harness.auth.objects.list('auth/')) ids.push(object.key.split('/').pop()!);
    return ids.sort();
  };
  const listedFileIds = async () =>
    ((await alice.get('/v1/message/files')).body.files as Array<{ id: string }>).map((file) => file.id).sort();

  /**
   * Exactly the accepted files are in the store and in the draft (polled: cut-off uploads are cleaned up after the
   * client left).
   */
  async function assertOnlyKeptFiles(context: string) {
    const expected = [...kept].sort();
    let stored: string[] = [];
    let listed: string[] = [];
    for (let i = 0; i < 100; i++) {
      [stored, listed] = await Promise.all([storedFileIds(), listedFileIds()]);
      if (JSON.stringify(stored) === JSON.stringify(expected) && JSON.stringify(listed) === JSON.stringify(expected))
        return;
      await sleep(30);
    }
    assert.fail(
      `objects ${JSON.stringify(stored)} and listed files ${JSON.stringify(listed)} ` +
        `differ from the accepted ones ${JSON.stringify(expected)}\n${context}`,
    );
  }

  before(async () => {
    harness = await startAuthHarness({
      env: { ATTACHMENT_MAX_SIZE: String(MAX_FILE), REPLY_MAX_TOTAL_SIZE: String(40 * MAX_FILE) },
    });
    alice = harness.reader();
    await signInAlice(harness, alice, harness.sealSample().id);
    await alice.get('/v1/message/files');
  });
  after(async () => {
    await harness?.stop();
  });

  const url = () => new URL('/v1/message/files', harness.auth.url);

  it('answers each with 201 or an error object, and keeps no object of an upload it did not accept', async () => {
    const statuses = new Map<number | string, number>();
    await fuzz('multipart uploads', upload, 250, async (plan) => {
      const parts = plan.parts.map((p) => ({
        headers: p.headers.map((h) => (h.length > 200 ? `${h.slice(0, 60)}…(${h.length})` : h)),
        content: `<${p.content.length} bytes>`,
        end: p.end,
      }));
      const context = `upload: ${JSON.stringify({ ...plan, preamble: plan.preamble.toString(), parts })}`;
      const answer = await send(url(), alice, plan).catch((error: unknown) =>
        assert.fail(`${(error as Error).message}\n${context}`),
      );
      statuses.set(answer?.status ?? 'cut', (statuses.get(answer?.status ?? 'cut') ?? 0) + 1);
      if (answer) {
        assert.ok(
          answer.status < 500,
          `not a server error: ${answer.status} ${JSON.stringify(answer.body)}\n${context}`,
        );
        if (answer.status === 201) {
          const file = answer.body as { id: string; name: string };
          assert.doesNotMatch(file.name, /[\\/\x00-\x1f\x7f]/, `a stored name is never a path\n${context}`);
          kept.add(file.id);
        } else {
          assertErrorObject(answer.status, answer.body, context);
        }
      } else {
        assert.equal(plan.delivery.kind, 'cut', `an answer to every upload that was sent whole\n${context}`);
      }
      await assertOnlyKeptFiles(context);
      // Keep the draft small: files accepted are removed again (and their objects with them).
      for (const id of [...kept]) {
        const removed = await alice.request('DELETE', `/v1/message/files/${id}`);
        assert.equal(removed.status, 204, JSON.stringify(removed.body));
        kept.delete(id);
      }
    });
    assert.ok(
      (statuses.get(201) ?? 0) > 10 &&
        [...statuses.keys()].some((status) => typeof status === 'number' && status >= 400),
      JSON.stringify([...statuses]),
    );
    await assertOnlyKeptFiles('after the fuzzing');

    // The process is alive and takes an ordinary upload.
    const ordinary = await uploadFile(alice, { filename: 'still-works.txt', content: Buffer.from('hello') });
    assert.equal(ordinary.status, 201, JSON.stringify(ordinary.body));
    kept.add(ordinary.body.id);
  });

  it('answers instead of hanging: a 64 KiB part header with bare LFs, then a part over 16 KiB', async () => {
    // Found with FUZZ_SEED=3 on Node 20: @fastify/busboy stopped reading such a form for good (16 KiB stream
    // buffers), and no timeout ended the request; HTTP_IDLE_TIMEOUT now answers 408. Node 22 and later
    // (64 KiB buffers) get through the form and find no file in it: 400. Either way an answer, never a hang.
    const plan: Upload = {
      headerBoundary: 'stall',
      bodyBoundary: 'stall',
      quoted: false,
      preamble: Buffer.alloc(0),
      parts: [
        // Bare LF line ends: the parser keeps looking for the end of this header block far into the body.
        { headers: [`X-Huge: ${'h'.repeat(76_500)}`], content: Buffer.from('12345678'), end: '\n' },
        { headers: ['Content-Disposition: form-data; name="text"'], content: Buffer.alloc(17_000, 'z'), end: '\r\n' },
      ],
      closing: 'closed',
      delivery: { kind: 'whole', chunked: false },
    };
    const answer = await send(url(), alice, plan);
    const expected = Number(process.versions.node.split('.')[0]) < 22 ? 408 : 400;
    assert.equal(answer!.status, expected, JSON.stringify(answer!.body));
    assertErrorObject(expected, answer!.body, 'a stalled form');
    await assertOnlyKeptFiles('after a stalled form');
    const ordinary = await uploadFile(alice, { filename: 'after-the-stall.txt', content: Buffer.from('hello') });
    assert.equal(ordinary.status, 201, JSON.stringify(ordinary.body));
  });
});
