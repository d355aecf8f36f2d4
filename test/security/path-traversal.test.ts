import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import fc from 'fast-check';
import MailComposer from 'nodemailer/lib/mail-composer';
import { AppError } from '../../src/kernel/errors.ts';
import { createLocalObjectStore, type ObjectStore } from '../../src/kernel/objects/index.ts';
import { createS3ObjectStore } from '../../src/kernel/objects/s3.ts';
import { ALICE, BOB, signInAlice, startAuthHarness, type AuthHarness } from '../support/auth-harness.ts';
import type { Reader } from '../support/auth-reader.ts';
import { assertErrorObject, fuzz } from '../support/fuzz.ts';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Every file below `dir`, as paths relative to it. */
async function filesBelow(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

async function refusedWith400(operation: () => Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(operation, (error: unknown) => {
    assert.ok(error instanceof AppError, `${what}: ${String(error)}`);
    assert.equal(error.status, 400, `${what}: ${error.message}`);
    return true;
  });
}

const BAD_KEYS = [
  '',
  '.',
  '..',
  '../x',
  '../../etc/passwd',
  'a/../../x',
  'a/..',
  'a/../b',
  './a',
  'a/./b',
  '/etc/passwd',
  '/a',
  'a//b',
  'a/',
  'a\\..\\..\\x',
  '..\\x',
  'C:\\x',
  'a\u0000b',
  'a\nb',
  '%2e%2e/x',
  '..%2fx',
  '%2e%2e%2f',
  'a b',
  ' a',
  'ａ',
  'é',
  '~tmp/x',
  'x'.repeat(1025),
];

describe('path traversal in object keys', () => {
  let sandbox: string;
  let root: string;
  let local: ObjectStore;
  let s3: ObjectStore;

  before(async () => {
    sandbox = await mkdtemp(join(tmpdir(), 'sealpost-traversal-'));
    root = join(sandbox, 'store');
    local = createLocalObjectStore({ dir: root });
    // Nothing listens there: a key checked only after a network call would come back as a 503, not a 400.
    s3 = createS3ObjectStore({
      endpoint: 'http://127.0.0.1:9',
      bucket: 'traversal',
      region: 'us-east-1',
      accessKeyId: 'x',
      secretAccessKey: 'y',
      forcePathStyle: true,
    });
  });
  after(async () => {
    await s3?.close();
    await local?.close();
    await rm(sandbox, { recursive: true, force: true });
  });

  it('refuses every key that could leave the store with a 400, on both drivers and for every operation', async () => {
    for (const [driver, store] of [
      ['local', local],
      ['s3', s3],
    ] as const) {
      for (const key of BAD_KEYS) {
        const what = `${driver} ${JSON.stringify(key.slice(0, 40))}`;
        await refusedWith400(() => store.put(key, 'x'), `put ${what}`);
        await refusedWith400(() => store.get(key), `get ${what}`);
        await refusedWith400(() => store.head(key), `head ${what}`);
        await refusedWith400(() => store.delete(key), `delete ${what}`);
        await refusedWith400(async () => {
          for await (const _ of store.list(`${key}/`)) break;
        }, `list ${what}/`);
      }
    }
    assert.deepEqual(
      (await readdir(sandbox)).filter((entry) => entry !== 'store'),
      [],
      'nothing was written beside the store',
    );
  });

  it('never writes outside its folder, whatever the key (fuzzed)', async () => {
    const units = ['.', '..', '/', '\\', 'a', 'b', '%2e', '%2f', '~', '\u0000', ' ', ':', 'é', '-', '_'];
    const key = fc.array(fc.constantFrom(...units), { minLength: 1, maxLength: 12 }).map((parts) => parts.join(''));
    let stored = 0;
    await fuzz('local object keys', key, 400, async (candidate) => {
      let accepted = false;
      try {
        await local.put(candidate, Buffer.from(candidate));
        accepted = true;
      } catch (error) {
        // Refused as invalid (400), or a key that clashes with another used as its folder (409).
        assert.ok(
          error instanceof AppError && [400, 409].includes(error.status),
          `${JSON.stringify(candidate)}: ${String(error)}`,
        );
      }
      if (accepted) {
        stored++;
        const path = resolve(root, ...candidate.split('/'));
        assert.ok(path.startsWith(root + sep), `${JSON.stringify(candidate)} is stored inside the store (${path})`);
        const chunks: Buffer[] = [];
        for await (const chunk of await local.get(candidate)) chunks.push(chunk as Buffer);
        assert.equal(Buffer.concat(chunks).toString(), candidate);
      }
      assert.deepEqual(
        (await readdir(sandbox)).filter((entry) => entry !== 'store'),
        [],
        `nothing beside the store after ${JSON.stringify(candidate)}`,
      );
    });
    assert.ok(stored > 5, `some keys were valid (${stored})`);
    // Everything on disk is an object a valid key names (or the driver's temp folder, which no key can reach).
    for (const file of await filesBelow(root)) {
      assert.ok(resolve(root, file).startsWith(root + sep) && !file.split(sep).includes('..'), file);
      assert.ok(
        file.startsWith('~tmp') || (await local.head(file.split(sep).join('/'))) !== undefined,
        `${file} is an object`,
      );
    }
  });
});

/** A multipart upload whose part header is written byte for byte (names a browser would never send). */
async function uploadRaw(reader: Reader, dispositionParams: string, content = Buffer.from('file content')) {
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; ${dispositionParams}\r\n` +
        'Content-Type: text/plain\r\n\r\n',
      'utf8',
    ),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const response = await fetch(`${reader.baseUrl}/v1/message/files`, {
    method: 'POST',
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      cookie: reader.cookie!,
      'x-csrf-token': reader.csrf!,
    },
    body,
  });
  return { status: response.status, body: (await response.json()) as { id: string; name: string } };
}

/** RFC 6266: an ASCII fallback without quotes, backslashes or controls, and the exact name in RFC 8187 form. */
const SAFE_DISPOSITION = new RegExp(
  '^attachment; ' +
    /filename="([\x20\x21\x23-\x5b\x5d-\x7e]*)"; /.source +
    /filename\*=UTF-8''((?:[A-Za-z0-9!#$&+.^_`|~-]|%[0-9A-F]{2})*)$/.source,
);

describe('path traversal in uploaded file names and the names of downloads', () => {
  let harness: AuthHarness;
  let alice: Reader;
  const marker = `sealpost-marker-${randomBytes(6).toString('hex')}`;

  before(async () => {
    harness = await startAuthHarness({
      env: { SMS_LIMIT_NUMBER_INTERVAL: '0s', SMS_LIMIT_NUMBER_HOURLY: '1000', SMS_LIMIT_IP_HOURLY: '1000' },
    });
    alice = harness.reader();
    await signInAlice(harness, alice, harness.sealSample().id);
    await alice.get('/v1/message/files');
  });
  after(async () => {
    await harness?.stop();
  });

  it('keeps an upload under a generated key whatever its name; the name it shows is never a path', async () => {
    const names = [
      `../../../../../../tmp/${marker}.txt`,
      `..\\..\\..\\${marker}.txt`,
      `/etc/${marker}.txt`,
      `C:\\Windows\\${marker}.txt`,
      `a/b/../${marker}.txt`,
      `%2e%2e%2f${marker}.txt`,
      `..%2f..%2f${marker}.txt`,
      '..',
      '.',
      '/',
      `${marker}\u0000.txt`,
      `${marker}\r\nX-Injected: 1.txt`,
      `~tmp/${marker}`,
      `${'n'.repeat(254)}😀😀.txt`,
    ];
    const ids: string[] = [];
    for (const name of names) {
      for (const params of [
        `filename="${name.replace(/"/g, '%22').replace(/[\r\n]/g, '')}"`,
        `filename*=UTF-8''${encodeURIComponent(name)}`,
      ]) {
        const uploaded = await uploadRaw(alice, params);
        if (uploaded.status === 400) {
          // busboy does not take a filename* whose decoded value has a line break as a file at all.
          assert.match(params, /%0D%0A/, `${params}: ${JSON.stringify(uploaded.body)}`);
          assertErrorObject(400, uploaded.body, params);
          continue;
        }
        assert.equal(uploaded.status, 201, `${params}: ${JSON.stringify(uploaded.body)}`);
        ids.push(uploaded.body.id);
        const shown = uploaded.body.name;
        assert.doesNotMatch(shown, /[\\/\x00-\x1f\x7f]/, `${params} → ${JSON.stringify(shown)}`);
        assert.doesNotMatch(shown, LONE_SURROGATE, `${params} → a well-formed name`);
        assert.ok(shown !== '.' && shown !== '..' && shown.length > 0, `${params} → ${JSON.stringify(shown)}`);
      }
    }
    const listed = ((await alice.get('/v1/message/files')).body.files as Array<{ id: string; name: string }>).map(
      (file) => file.name,
    );
    assert.ok(listed.includes(`${'n'.repeat(254)}😀`), 'a long name is cut between characters, and stored as shown');
    // In the store: one object per file, each under auth/drafts/<draft id>/<file id>, nothing else.
    const keys: string[] = [];
    for await (const object of harness.auth.objects.list('')) keys.push(object.key);
    assert.equal(keys.length, ids.length, JSON.stringify(keys));
    for (const key of keys) assert.match(key, /^auth\/drafts\/[0-9a-f-]{36}\/[0-9a-f-]{36}$/);
    assert.deepEqual(keys.map((key) => key.split('/')[3]).sort(), [...ids].sort());
    // And no file named after the upload was written anywhere a path in it pointed to.
    const dataDir = resolve(harness.auth.config.dataDir);
    assert.ok(
      !(await filesBelow(dataDir)).some((file) => file.includes(marker)),
      'no file in the data folder is named after an upload',
    );
    for (const place of [tmpdir(), join(tmpdir(), '..'), '/etc', dataDir, join(dataDir, '..')]) {
      assert.ok(
        !(await readdir(place).catch(() => [] as string[])).some((entry) => entry.includes(marker)),
        `nothing named after an upload in ${place}`,
      );
    }
    assert.ok(!existsSync(`/tmp/${marker}.txt`));
  });

  it('serves sealed attachments with a safe Content-Disposition whatever their names (fuzzed)', async () => {
    const name = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.constantFrom(
        'a"b.txt',
        'a\\"; filename="evil.exe',
        'x\r\nContent-Type: text/html',
        '../../etc/passwd',
        "it's (1) *.txt",
        '%22%0D%0A.txt',
        'ü€😀.pdf',
        'a;b=c.txt',
      ),
      // Close to the 255-character cut, with characters of two UTF-16 units where the cut falls.
      fc.integer({ min: 250, max: 256 }).map((n) => `${'n'.repeat(n)}😀😀.txt`),
    );
    let downloads = 0;
    await fuzz('download names', fc.array(name, { minLength: 1, maxLength: 15 }), 20, async (names) => {
      const raw = await new MailComposer({
        from: 'sender@example.org',
        to: [ALICE.email, BOB.email],
        subject: 'files',
        text: 'see attached',
        headers: { 'X-Sealpost-Mobile': `${ALICE.email}=${ALICE.mobile}` },
        attachments: names.map((filename, i) => ({
          filename,
          content: `content ${i}`,
          contentType: i % 2 ? 'text/html' : 'image/svg+xml',
        })),
      })
        .compile()
        .build();
      const record = harness.seal.register({ raw, recipients: [ALICE, BOB] });
      const reader = harness.reader();
      await signInAlice(harness, reader, record.id);
      const message = await reader.get('/v1/message');
      assert.equal(message.status, 200, JSON.stringify(message.body));
      const listed = message.body.attachments as Array<{ index: number; filename: string }>;
      assert.equal(listed.length, names.length);
      for (const attachment of listed) {
        const what = `attachment ${attachment.index} named ${JSON.stringify(names[attachment.index])}`;
        const response = await fetch(`${harness.auth.url}/v1/message/attachments/${attachment.index}`, {
          headers: { cookie: reader.cookie! },
        });
        assert.equal(response.status, 200, `${what}: ${await response.clone().text()}`);
        const disposition = response.headers.get('content-disposition') ?? '';
        const match = SAFE_DISPOSITION.exec(disposition);
        assert.ok(match, `${what}: Content-Disposition ${JSON.stringify(disposition)}`);
        assert.equal(decodeURIComponent(match[2]!), attachment.filename, `${what}: filename* carries the name shown`);
        assert.doesNotMatch(attachment.filename, /[\\/\x00-\x1f\x7f]/, what);
        // The sender chose HTML and SVG types: still a download that never renders or sniffs here.
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
        assert.match(response.headers.get('content-security-policy') ?? '', /sandbox/);
        assert.equal(Buffer.from(await response.arrayBuffer()).toString(), `content ${attachment.index}`);
        downloads++;
      }
    });
    assert.ok(downloads >= 60, `${downloads} downloads`);
  });
});
