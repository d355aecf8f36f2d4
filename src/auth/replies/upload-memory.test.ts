import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { signInAlice, startAuthHarness, type AuthHarness } from '../../../test/support/auth-harness.ts';
import type { Reader } from '../../../test/support/auth-reader.ts';
import { startClamd, type ClamdTestServer } from '../../../test/support/clamd.ts';
import { generatedBytes, uploadFile } from '../../../test/support/multipart-upload.ts';
import { startS3Server, type S3TestServer } from '../../../test/support/s3-server.ts';

const MiB = 1024 * 1024;
const SIZE = 100 * MiB;

/**
 * A full collection on demand (node's --expose-gc, set at run time: a context created after the flag has
 * `gc`). The sampler collects every 100 ms, so that the RSS it reads is what the upload holds, not the
 * discarded buffers V8 has yet to collect: without it the growth measured on Node 22 ranged from +34 to
 * +65 MiB (once over the bound in CI), and on Node 24 and 26 from +65 to +87 MiB, as their V8 collects later.
 */
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * An upload is streamed end to end — request, type check, clamd, S3 multipart — and never held whole:
 * the service runs in this process, so this process's RSS is what it costs. The file is generated as it
 * is sent, so the client adds next to nothing.
 */
describe('a 100 MiB reply attachment', () => {
  let s3: S3TestServer;
  let clamd: ClamdTestServer;
  let harness: AuthHarness;
  let alice: Reader;

  before(async () => {
    [s3, clamd] = await Promise.all([startS3Server(), startClamd({ streamMaxLength: '200M' })]);
    harness = await startAuthHarness({
      s3,
      env: {
        ...clamd.env,
        ATTACHMENTS_REQUIRE_SCAN: 'true',
        ATTACHMENT_MAX_SIZE: '128MiB',
        REPLY_MAX_TOTAL_SIZE: '256MiB',
        LOG_LEVEL: 'info',
      },
    });
    alice = harness.reader();
    await signInAlice(harness, alice, harness.sealSample().id);
  });
  after(async () => {
    await harness?.stop();
    await clamd?.stop();
    await s3?.stop();
  });

  it('goes through scanned and intact, RSS growing under 64 MiB (measured figure in the diagnostics)', async (t) => {
    // Warm-up: every code path of an upload loaded and its buffers allocated once.
    assert.equal(
      (await uploadFile(alice, { filename: 'warm-up.bin', content: generatedBytes(9 * MiB), size: 9 * MiB })).status,
      201,
    );

    const sent = createHash('sha256');
    async function* counted() {
      for await (const chunk of generatedBytes(SIZE)) {
        sent.update(chunk);
        yield chunk;
      }
    }
    collectGarbage();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    let ticks = 0;
    const sampler = setInterval(() => {
      if (++ticks % 5 === 0) collectGarbage();
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    let uploaded;
    try {
      uploaded = await uploadFile(alice, { filename: 'scan-archive.bin', content: counted(), size: SIZE });
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const growth = peak - baseline;
    t.diagnostic(
      `RSS ${(baseline / MiB).toFixed(0)} MiB before, peak ${(peak / MiB).toFixed(0)} MiB: ` +
        `+${(growth / MiB).toFixed(1)} MiB for ${SIZE / MiB} MiB`,
    );

    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    assert.equal(uploaded.body.size, SIZE);
    assert.equal(uploaded.body.scanned, true);
    // The upload memory bound (docs/design.md#performance-goals): uploads stream, never held whole. Measured
    // with the collections above on the project's 2-core machines: +6 to +21 MiB on Node 22, 24 and 26, about
    // the live part (the S3 driver's 5 MiB parts: two in flight, one being assembled) and malloc's high-water
    // mark. An upload held whole adds its 100 MiB (+105 MiB when the test itself kept the chunks).
    assert.ok(growth < 64 * MiB, `RSS grew by ${(growth / MiB).toFixed(1)} MiB during the upload of ${SIZE / MiB} MiB`);

    const rows = await harness.auth.database.db
      .withSchema('auth')
      .selectFrom('draft_files')
      .select(['object_key', 'size'])
      .where('id', '=', uploaded.body.id)
      .execute();
    const stored = createHash('sha256');
    let bytes = 0;
    for await (const chunk of await harness.auth.objects.get(rows[0]!.object_key)) {
      stored.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    assert.equal(bytes, SIZE);
    assert.equal(stored.digest('hex'), sent.digest('hex'), 'the stored object is the uploaded file');
  });
});
