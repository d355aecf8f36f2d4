import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import type { Kysely } from 'kysely';
import type { AuthTables } from '../tables.ts';
import { assertError } from '../../../test/support/auth-assert.ts';
import { ALICE, BOB, signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { EICAR, startClamd, type ClamdTestServer } from '../../../test/support/clamd.ts';
import {
  generatedBuffer,
  generatedBytes,
  uploadFile,
  type UploadResponse,
} from '../../../test/support/multipart-upload.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';
import { nestedZip, zipBomb } from '../../../test/support/zip.ts';

const MiB = 1024 * 1024;
const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), generatedBuffer(50_000), Buffer.from('\n%%EOF\n')]);
/** A Windows executable's first bytes: the DOS header's "MZ" signature, then PE's. */
const EXE = Buffer.concat([
  Buffer.from('MZ'),
  Buffer.alloc(58),
  Buffer.from([0x80, 0, 0, 0]),
  Buffer.alloc(64),
  Buffer.from('PE\0\0'),
  generatedBuffer(4000),
]);

/** Signs BOB in by email code (without OUTBOUND_SMTP_URL the mail lands in the outbox folder). */
async function signInBob(harness: AuthHarness, reader: Reader, messageId: string) {
  await reader.get(`/v1/config?messageId=${messageId}`);
  const sent = await reader.request('POST', '/v1/auth/code', {
    body: { messageId, email: BOB.email, method: 'email' },
  });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const outbox = join(harness.auth.config.dataDir, 'outbox');
  const file = (await readdir(outbox))
    .filter((name) => name.endsWith('.eml'))
    .sort()
    .at(-1)!;
  const code = /Your Sealpost code is (\d{6})/.exec(await readFile(join(outbox, file), 'utf8'))![1]!;
  const verified = await reader.request('POST', '/v1/auth/verify', { body: { code, rememberMe: false } });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
}

/** An upload's answer is the spec's error object with this status and errorCode. */
function assertRefused(response: UploadResponse, status: number, errorCode: string) {
  assertError(
    { status: response.status, body: response.body, headers: new Headers(), setCookie: undefined },
    status,
    errorCode,
  );
}

describe('reply attachments: upload checks, S3 storage, drafts across sessions', () => {
  let s3: S3TestServer;
  let clamd: ClamdTestServer;
  let harness: AuthHarness;
  let db: Kysely<AuthTables>;
  let messageId: string;
  let alice: Reader;

  const objectKeys = async () => {
    const keys: string[] = [];
    for await (const object of harness.auth.objects.list('auth/')) keys.push(object.key);
    return keys;
  };
  const fileRows = () => db.selectFrom('draft_files').selectAll().execute();
  const pendingMultipartUploads = async () => {
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    try {
      const listing = await client.send(new ListMultipartUploadsCommand({ Bucket: harness.auth.config.s3.bucket! }));
      return listing.Uploads ?? [];
    } finally {
      client.destroy();
    }
  };
  /** Nothing of a refused upload is left: no object, no row, no unfinished multipart upload. */
  const assertNothingKeptBeyond = async (keys: string[]) => {
    assert.deepEqual((await objectKeys()).sort(), [...keys].sort());
    assert.deepEqual((await fileRows()).map((row) => row.object_key).sort(), [...keys].sort());
    assert.deepEqual(await pendingMultipartUploads(), []);
  };
  const deleteAll = async (reader: Reader) => {
    const listing = await reader.get('/v1/message/files');
    for (const file of listing.body.files)
      assert.equal((await reader.request('DELETE', `/v1/message/files/${file.id}`)).status, 204);
  };

  before(async () => {
    [s3, clamd] = await Promise.all([startS3Server(), startClamd()]);
    harness = await startAuthHarness({
      s3,
      env: {
        ...clamd.env,
        ATTACHMENTS_REQUIRE_SCAN: 'true',
        ATTACHMENT_MAX_SIZE: '10MiB',
        REPLY_MAX_TOTAL_SIZE: '12MiB',
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
      },
    });
    db = harness.auth.database.db.withSchema('auth') as Kysely<AuthTables>;
    messageId = harness.sealSample().id;
    alice = harness.reader();
    await signInAlice(harness, alice, messageId);
  });
  after(async () => {
    await harness?.stop();
    await clamd?.stop();
    await s3?.stop();
  });

  it('streams an accepted file to S3, scans it, and answers with its id, name, size and detected type', async () => {
    const uploaded = await uploadFile(alice, {
      filename: 'contract signed.pdf',
      contentType: 'application/octet-stream',
      content: PDF,
    });
    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    const file = uploaded.body;
    assert.match(file.id, /^[0-9a-f-]{36}$/);
    assert.equal(file.name, 'contract signed.pdf');
    assert.equal(file.size, PDF.length);
    assert.equal(file.detectedType, 'application/pdf');
    assert.equal(file.contentType, 'application/pdf');
    assert.equal(file.scanned, true);

    const [row] = await fileRows();
    assert.equal(row!.state, 'stored');
    assert.equal(
      Buffer.compare(await streamBytes(harness, row!.object_key), PDF),
      0,
      'the stored object holds the uploaded bytes',
    );

    const listing = await alice.get('/v1/message/files');
    assert.equal(listing.status, 200);
    assert.match(listing.headers.get('x-csrf-token')!, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(listing.body.files, [file]);
    assert.equal(listing.body.totalSize, PDF.length);
    assert.deepEqual(listing.body.limits, { maxFileSize: 10 * MiB, maxTotalSize: 12 * MiB });
    await deleteAll(alice);
  });

  it('refuses an executable by magic bytes (forbidden_file_type), whatever its name and Content-Type', async () => {
    const refused = await uploadFile(alice, { filename: 'invoice.pdf', contentType: 'application/pdf', content: EXE });
    assertRefused(refused, 403, 'forbidden_file_type');
    assert.match(refused.body.message, /application\/x-msdownload/);
    await assertNothingKeptBeyond([]);
  });

  it('refuses scripts and executables by extension (forbidden_file_type), whatever case or trailing dots', async () => {
    for (const filename of ['install.js', 'setup.EXE', 'run.bat.', 'deploy.sh']) {
      const refused = await uploadFile(alice, {
        filename,
        contentType: 'text/plain',
        content: Buffer.from('echo harmless?\n'),
      });
      assertRefused(refused, 403, 'forbidden_file_type');
    }
    // A shell script has no magic bytes, but it starts with #!: refused whatever it is called.
    const script = await uploadFile(alice, { filename: 'notes.txt', content: Buffer.from('#!/bin/sh\nrm -rf ~\n') });
    assertRefused(script, 403, 'forbidden_file_type');
    await assertNothingKeptBeyond([]);
  });

  it('stores, lists and sends names without bidi or invisible characters, so the extension shown is real', async () => {
    const uploaded = await uploadFile(alice, { filename: 'contract\u202Efdp.pdf', content: PDF });
    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    assert.equal(uploaded.body.name, 'contractfdp.pdf');
    assert.deepEqual(
      (await fileRows()).map((row) => row.filename),
      ['contractfdp.pdf'],
    );
    assert.deepEqual(
      (await alice.get('/v1/message/files')).body.files.map((file: { name: string }) => file.name),
      ['contractfdp.pdf'],
    );
    await deleteAll(alice);
  });

  it('refuses an extension hidden by an invisible character or bidi override: forbidden_file_type', async () => {
    // Compared as sent, "run.exe\u200B" ends in "exe\u200B" and "setup.ex\u00ADe" in "ex\u00ADe": both would pass.
    for (const filename of ['run.exe\u200B', 'setup.ex\u00ADe', 'invoice\u202Efdp.exe', 'report\u2066.js\u2069']) {
      const refused = await uploadFile(alice, {
        filename,
        contentType: 'text/plain',
        content: Buffer.from('harmless?\n'),
      });
      assertRefused(refused, 403, 'forbidden_file_type');
      assert.doesNotMatch(
        refused.body.message,
        /[\u00AD\u200B\u202E\u2066\u2069]/,
        'the refusal names the cleaned file',
      );
    }
    await assertNothingKeptBeyond([]);
  });

  it('refuses the EICAR test file with malware_detected and deletes what was stored', async () => {
    const content = Buffer.concat([Buffer.from('Quarterly figures\n'), EICAR, Buffer.from('\nend\n')]);
    const refused = await uploadFile(alice, { filename: 'figures.txt', contentType: 'text/plain', content });
    assertRefused(refused, 403, 'malware_detected');
    assert.match(refused.body.message, /Eicar-Test-Signature/);
    await assertNothingKeptBeyond([]);
    const metrics = await (await fetch(`${harness.auth.metricsUrl}/metrics`)).text();
    assert.match(metrics, /^auth_attachments_scanned_total\{verdict="infected"[^}]*\} [1-9]/m, 'counted by verdict');
  });

  it('refuses EICAR opening a 6 MiB file once S3 has parts: malware_detected, no object or upload left', async () => {
    const size = 6 * MiB;
    const held = 512 * 1024;
    let multipartSeen = false;
    // The last 512 KiB wait until S3 shows the multipart upload under way, so the refusal has parts to abort.
    async function* content() {
      yield EICAR;
      yield* generatedBytes(size - held - EICAR.length);
      const deadline = Date.now() + 20_000;
      while ((await pendingMultipartUploads()).length === 0) {
        if (Date.now() > deadline) throw new Error('no multipart upload was started');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      multipartSeen = true;
      yield* generatedBytes(held);
    }
    const refused = await uploadFile(alice, { filename: 'scan.bin', content: content(), size });
    assert.ok(multipartSeen, 'the upload had become a multipart upload before it was refused');
    assertRefused(refused, 403, 'malware_detected');
    assert.match(refused.body.message, /Eicar-Test-Signature/);
    await assertNothingKeptBeyond([]);
  });

  it('refuses zip bombs and over-nested archives (malware_detected), keeping nothing; a plain one passes', async () => {
    // 3 × 40 MiB of zeros in about 120 KB: more than the test clamd's MaxScanSize (100M) unpacked.
    const bomb = zipBomb(3, 40 * MiB);
    assert.ok(bomb.length < 200_000, `the bomb is small: ${bomb.length} bytes`);
    for (const [filename, content, limit] of [
      ['holiday photos.zip', bomb, 'MaxScanSize'],
      ['nested.zip', nestedZip(20), 'MaxRecursion'],
    ] as const) {
      const refused = await uploadFile(alice, { filename, contentType: 'application/zip', content });
      assertRefused(refused, 403, 'malware_detected');
      assert.match(
        refused.body.message,
        new RegExp(`cannot be checked for malware.*Heuristics\\.Limits\\.Exceeded\\.${limit}`),
      );
      await assertNothingKeptBeyond([]);
    }
    assert.ok(
      harness.auth.logs.some(
        (line) => line.level === 40 && /exceeds the malware scanner's archive limits/.test(String(line.msg)),
      ),
    );

    const plain = await uploadFile(alice, {
      filename: 'nested a little.zip',
      contentType: 'application/zip',
      content: nestedZip(3),
    });
    assert.equal(plain.status, 201, JSON.stringify(plain.body));
    assert.equal(plain.body.scanned, true);
    await deleteAll(alice);
  });

  it('cuts an upload off once past ATTACHMENT_MAX_SIZE, with file_too_large and no object left', async () => {
    const size = 200 * MiB;
    const refused = await uploadFile(alice, { filename: 'huge.bin', content: generatedBytes(size), size });
    assertRefused(refused, 403, 'file_too_large');
    assert.ok(refused.cutOff, 'the answer came before the whole file was sent');
    // What was sent before the answer: the 10 MiB allowed, plus what socket buffers held meanwhile.
    assert.ok(
      refused.bytesSent < 32 * MiB,
      `sent ${(refused.bytesSent / MiB).toFixed(1)} MiB of 200 before the answer`,
    );
    await assertNothingKeptBeyond([]);
  });

  it('refuses a file taking the draft past REPLY_MAX_TOTAL_SIZE (upload_limit_reached), keeping the rest', async () => {
    const first = await uploadFile(alice, { filename: 'part-1.bin', content: generatedBytes(7 * MiB), size: 7 * MiB });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const second = await uploadFile(alice, { filename: 'part-2.bin', content: generatedBytes(7 * MiB), size: 7 * MiB });
    assertRefused(second, 403, 'upload_limit_reached');
    const listing = await alice.get('/v1/message/files');
    assert.deepEqual(
      listing.body.files.map((file: { name: string }) => file.name),
      ['part-1.bin'],
    );
    await assertNothingKeptBeyond((await fileRows()).map((row) => row.object_key));
    assert.equal((await objectKeys()).length, 1);
    await deleteAll(alice);
    await assertNothingKeptBeyond([]);
  });

  it('removes a file with DELETE: its object and its row; a second DELETE is a 404', async () => {
    const uploaded = await uploadFile(alice, { filename: 'a.pdf', content: PDF });
    assert.equal(uploaded.status, 201);
    assert.equal((await objectKeys()).length, 1);
    const removed = await alice.request('DELETE', `/v1/message/files/${uploaded.body.id}`);
    assert.equal(removed.status, 204);
    await assertNothingKeptBeyond([]);
    assertError(await alice.request('DELETE', `/v1/message/files/${uploaded.body.id}`), 404, 'not_found');
  });

  it('continues a draft in another session of the recipient: text and files after signing in elsewhere', async () => {
    const saved = await alice.request('PUT', '/v1/message/reply', {
      body: { text: 'Signed copy attached.', bcc: ALICE.email },
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    const uploaded = await uploadFile(alice, { filename: 'signed.pdf', content: PDF });
    assert.equal(uploaded.status, 201);

    const otherDevice = harness.reader();
    await signInAlice(harness, otherDevice, messageId);
    assert.notEqual(otherDevice.cookie, alice.cookie);
    const draft = await otherDevice.get('/v1/message/reply');
    assert.equal(draft.status, 200);
    assert.equal(draft.body.text, 'Signed copy attached.');
    assert.equal(draft.body.bcc, ALICE.email);
    assert.deepEqual(draft.body.files, [uploaded.body]);
    assert.deepEqual((await otherDevice.get('/v1/message/files')).body.files, [uploaded.body]);

    // The other device changes it; the first sees the change.
    assert.equal(
      (await otherDevice.request('PUT', '/v1/message/reply', { body: { text: 'Signed copy attached (v2).' } })).status,
      200,
    );
    assert.equal((await alice.get('/v1/message/reply')).body.text, 'Signed copy attached (v2).');
  });

  it("keeps drafts apart per recipient: Bob sees none of Alice's files and cannot delete them", async () => {
    const bob = harness.reader();
    await signInBob(harness, bob, messageId);
    const aliceFiles = (await alice.get('/v1/message/files')).body.files;
    assert.equal(aliceFiles.length, 1);
    assert.deepEqual((await bob.get('/v1/message/files')).body.files, []);
    assert.equal((await bob.get('/v1/message/reply')).body.text, '');
    assertError(await bob.request('DELETE', `/v1/message/files/${aliceFiles[0].id}`), 404, 'not_found');
    assert.equal((await alice.get('/v1/message/files')).body.files.length, 1);
  });

  it('refuses uploads to a reader who is not signed in (401), and without the CSRF token (403)', async () => {
    const anonymous = harness.reader();
    await anonymous.get('/v1/config');
    assertRefused(await uploadFile(anonymous, { filename: 'a.pdf', content: PDF }), 401, 'unauthenticated');
    assertRefused(await uploadFile(alice, { filename: 'a.pdf', content: PDF, csrf: null }), 403, 'csrf_token_invalid');
  });

  it('answers 503 with an error object when the object store is down, and shows no file', async () => {
    const before = (await fileRows()).map((row) => row.object_key);
    await s3.pause();
    try {
      const refused = await uploadFile(alice, { filename: 'during-outage.pdf', content: PDF });
      assertRefused(refused, 503, 'unavailable');
    } finally {
      await s3.resume();
    }
    assert.deepEqual((await objectKeys()).sort(), [...before].sort());
    assert.deepEqual(await pendingMultipartUploads(), []);
    // The store could not be told to delete during the outage: the row waits, as `uploading`, for the watcher.
    assert.deepEqual(
      (await fileRows())
        .filter((row) => row.state === 'stored')
        .map((row) => row.object_key)
        .sort(),
      [...before].sort(),
    );
    assert.equal((await alice.get('/v1/message/files')).body.files.length, before.length);
    await db.deleteFrom('draft_files').where('state', '=', 'uploading').execute();
  });

  it('answers 503 (error object) if clamd is down and ATTACHMENTS_REQUIRE_SCAN=true, keeping nothing', async () => {
    const before = (await fileRows()).map((row) => row.object_key);
    await clamd.stop();
    const refused = await uploadFile(alice, { filename: 'later.pdf', content: PDF });
    assertRefused(refused, 503, 'unavailable');
    assert.match(refused.body.message, /scanner/);
    await assertNothingKeptBeyond(before);
  });
});

async function streamBytes(harness: AuthHarness, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await harness.auth.objects.get(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('reply attachments when the scanner cannot scan and the scan is not required', () => {
  let clamd: ClamdTestServer;
  let harness: AuthHarness;
  let alice: Reader;

  before(async () => {
    clamd = await startClamd({ streamMaxLength: '1M' });
    harness = await startAuthHarness({
      env: { ...clamd.env, ATTACHMENTS_REQUIRE_SCAN: 'false', SMS_LIMIT_NUMBER_INTERVAL: '0s' },
    });
    alice = harness.reader();
    await signInAlice(harness, alice, harness.sealSample().id);
  });
  after(async () => {
    await harness?.stop();
    await clamd?.stop();
  });

  it("refuses a file larger than clamd's StreamMaxLength with file_too_large, never passing it unscanned", async () => {
    const refused = await uploadFile(alice, {
      filename: 'padded.bin',
      content: generatedBytes(3 * MiB),
      size: 3 * MiB,
    });
    assertRefused(refused, 403, 'file_too_large');
    assert.match(refused.body.message, /scanner/);
    assert.deepEqual((await alice.get('/v1/message/files')).body.files, []);
  });

  it('accepts a file unscanned (scanned: false) while clamd is down, and says so in the log', async () => {
    await clamd.stop();
    const uploaded = await uploadFile(alice, { filename: 'a.pdf', content: PDF });
    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    assert.equal(uploaded.body.scanned, false);
    assert.ok(
      harness.auth.logs.some((line) => line.level === 40 && /accepting the upload unscanned/.test(String(line.msg))),
    );
  });
});
