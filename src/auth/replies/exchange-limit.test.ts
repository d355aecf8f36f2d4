import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { loadConfig } from '../../cli/config.ts';
import { startWarnings } from '../../cli/start.ts';
import { composeReply } from './compose.ts';
import { REPLY_HEADROOM, replySizeShortfall, replySizeWarning } from './exchange-limit.ts';
import { replyIdentity } from './identity.ts';
import { startSealpostProcess } from '../../../test/support/sealpost-process.ts';

const MiB = 1024 * 1024;

/** The size of the MIME message the auth service hands to the exchange engine for these files and bodies. */
async function composedSize(files: number[], text: string, html: string): Promise<number> {
  const { stream } = composeReply({
    // As the defaults write it (REPLY_FROM unset: AUTH_MAIL_FROM's address, the recipient in Reply-To).
    ...replyIdentity(
      { email: 'alice@example.com' },
      { replyFrom: 'Sealpost <no-reply@localhost>', fromRecipient: false },
    ),
    to: 'sender@example.org',
    original: { messageId: '<contract-1@example.org>', references: [], subject: 'Contract', names: new Map() },
    text,
    html,
    attachments: files.map((size, i) => ({
      filename: `annex-${i}.bin`,
      contentType: 'application/octet-stream',
      open: async () => Readable.from([randomBytes(size)]),
    })),
    date: new Date(),
  });
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) size += chunk.length;
  return size;
}

describe("the exchange engine's SMTP_MAX_MESSAGE_SIZE against REPLY_MAX_TOTAL_SIZE", () => {
  it('finds the defaults too small and says what to set and what can be sent meanwhile', () => {
    const shortfall = replySizeShortfall(50 * MiB, 25 * MiB);
    assert.ok(shortfall);
    assert.equal(shortfall.suggested, '70MiB');
    // 25 MiB of message holds about 17 MiB of files once base64-encoded.
    assert.ok(shortfall.largestFiles > 17 * MiB && shortfall.largestFiles < 18 * MiB, `${shortfall.largestFiles}`);
    assert.equal(replySizeShortfall(50 * MiB, 70 * MiB), undefined, 'the suggested value is enough');
    assert.equal(replySizeShortfall(10 * MiB, 25 * MiB), undefined);

    const warning = replySizeWarning(50 * MiB, 25 * MiB)!;
    assert.match(warning, /SMTP_MAX_MESSAGE_SIZE \(25 MiB\)/);
    assert.match(warning, /REPLY_MAX_TOTAL_SIZE \(50 MiB\)/);
    assert.match(warning, /Set SMTP_MAX_MESSAGE_SIZE=70MiB/);
    assert.match(warning, /more than 17\.\d MiB of files is refused with upload_limit_reached/);
  });

  it('matches the composer: the limit it asks for takes a full reply, the largest it names fits', async () => {
    // Long bodies (about 640 KB) in the least compact encoding: quoted-printable thick with accents.
    const text = 'Grüße '.repeat(50_000);
    const html = `<p>${'Grüße '.repeat(40_000)}</p>`;
    const maxTotal = 4 * MiB;
    const full = await composedSize([MiB, MiB, 2 * MiB], text, html);
    const needed = replySizeShortfall(maxTotal, 0)!.needed;
    assert.ok(full <= needed, `a reply with ${maxTotal} bytes of files is ${full} bytes; the check asks for ${needed}`);
    assert.ok(needed - full < REPLY_HEADROOM, 'and not much more');

    const smtpMax = 3 * MiB;
    const largest = replySizeShortfall(maxTotal, smtpMax)!.largestFiles;
    const fitting = await composedSize([largest - MiB, MiB], text, html);
    assert.ok(
      fitting <= smtpMax,
      `a reply with the ${largest} bytes of files named is ${fitting} bytes, over ${smtpMax}`,
    );
  });

  it('is checked only when one process runs both the auth service and exchange engine; the defaults agree', () => {
    assert.deepEqual(startWarnings(loadConfig({}), ['seal', 'exchange', 'auth']), [], 'no warning on the defaults');
    const large = loadConfig({ REPLY_MAX_TOTAL_SIZE: '50MiB' });
    assert.equal(startWarnings(large, ['seal', 'exchange', 'auth']).length, 1);
    assert.deepEqual(startWarnings(large, ['auth']), []);
    assert.deepEqual(startWarnings(large, ['exchange']), []);
    assert.deepEqual(
      startWarnings(loadConfig({ REPLY_MAX_TOTAL_SIZE: '50MiB', SMTP_MAX_MESSAGE_SIZE: '70MiB' }), [
        'seal',
        'exchange',
        'auth',
      ]),
      [],
    );
  });
});

describe('sealpost start all with replies larger than the messages the exchange takes', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('warns at start naming both variables, the value to set and the largest reply that can be sent', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-sizes-'));
    dirs.push(dataDir);
    // A first start on an empty data folder creates the embedded database: give it time.
    const sealpost = await startSealpostProcess(
      { SEALPOST_DATA_DIR: dataDir, REPLY_MAX_TOTAL_SIZE: '50MiB' },
      { timeoutMs: 120_000 },
    );
    try {
      const lines = sealpost
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string });
      const warnings = lines.filter((line) => line.level === 40 && /SMTP_MAX_MESSAGE_SIZE/.test(line.msg));
      assert.equal(warnings.length, 1, sealpost.stdout());
      assert.match(
        warnings[0]!.msg,
        /REPLY_MAX_TOTAL_SIZE \(50 MiB\).*Set SMTP_MAX_MESSAGE_SIZE=70MiB.*more than 17\.\d MiB of files/,
      );
      assert.match(sealpost.stderr(), /^Warning: SMTP_MAX_MESSAGE_SIZE/m, 'the banner repeats it');
    } finally {
      assert.equal(await sealpost.stop(), 0);
    }
  });
});
