import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { ServiceUnderTest } from '../../../test/support/services.ts';
import { postSeal, rawMessage, startSealOnStandIn, startStandIn, type StandIn } from '../../../test/support/seal.ts';
import { IN_MEMORY_READ_BYTES } from './sealer.ts';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('POST /v1/seal and reading back', () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  const service = () => ({ url: seal.url, serviceToken: seal.serviceToken });
  const get = (path: string, token = seal.serviceToken) =>
    fetch(`${seal.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

  before(async () => {
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn, {
      AUTH_PUBLIC_URL: 'https://read.example',
      SEAL_MAX_MESSAGE_SIZE: '12MiB',
    });
  });
  after(async () => {
    await seal?.stop();
    await standIn?.close();
  });

  it('seals: recipients from To, Cc and envelope, methods from X-Sealpost-Mobile, reader links, pins', async () => {
    const raw = rawMessage({
      from: '"Alice" <Alice@Sender.EXAMPLE>',
      to: 'Bob <bob@rcpt.example>, team: carol@rcpt.example, BOB@rcpt.example;',
      cc: 'dave@cc.example',
      subject: '=?UTF-8?Q?Qu=C3=A4rterly?= report',
      mobiles: ['bob@rcpt.example=+41 79 123 45 67', 'erin@bcc.example=+12015550123'],
    });
    const response = await postSeal(service(), raw, { envelopeRecipients: 'erin@bcc.example, <Dave@CC.example>' });
    assert.equal(response.status, 201, await response.clone().text());
    const body = await response.json();
    assert.match(body.id, /^[0-9a-f-]{36}$/);
    assert.equal(response.headers.get('location'), `/v1/sealed/${body.id}`);
    assert.equal(body.sha256, sha256(raw));
    assert.equal(body.sender, 'Alice@sender.example');
    assert.equal(body.subject, 'Quärterly report');
    assert.deepEqual(body.recipients, [
      { email: 'bob@rcpt.example', method: 'sms', mobileSource: 'header', link: `https://read.example/m/${body.id}` },
      { email: 'carol@rcpt.example', method: 'email', link: `https://read.example/m/${body.id}` },
      { email: 'dave@cc.example', method: 'email', link: `https://read.example/m/${body.id}` },
      { email: 'erin@bcc.example', method: 'sms', mobileSource: 'header', link: `https://read.example/m/${body.id}` },
    ]);
    assert.deepEqual(body.pins, [{ cluster: `127.0.0.1:${standIn.port}`, status: 'pinned' }]);
    assert.ok(standIn.pins().has(body.cid), 'the CID is pinned on the cluster');

    const metadata = await (await get(`/v1/sealed/${body.id}`)).json();
    assert.equal(metadata.cid, body.cid);
    assert.equal(metadata.size, raw.length);
    assert.ok(!Number.isNaN(Date.parse(metadata.sealedAt)));
    assert.deepEqual(metadata.recipients, [
      { email: 'bob@rcpt.example', method: 'sms', mobile: '+41791234567', mobileSource: 'header' },
      { email: 'carol@rcpt.example', method: 'email' },
      { email: 'dave@cc.example', method: 'email' },
      { email: 'erin@bcc.example', method: 'sms', mobile: '+12015550123', mobileSource: 'header' },
    ]);
    assert.equal(metadata.pins[0].status, 'pinned');

    const one = await get(`/v1/sealed/${body.id}/recipients/${encodeURIComponent('Bob@RCPT.example')}`);
    assert.deepEqual(await one.json(), {
      email: 'bob@rcpt.example',
      method: 'sms',
      mobile: '+41791234567',
      mobileSource: 'header',
    });
    assert.equal((await get(`/v1/sealed/${body.id}/recipients/mallory@rcpt.example`)).status, 404);
  });

  it('names the seal the content was verified against in X-Sealpost-Seal, as GET /v1/sealed/{id} has it', async () => {
    const raw = rawMessage({ body: 'read me with my seal' });
    const { id } = await (await postSeal(service(), raw)).json();
    const content = await get(`/v1/sealed/${id}/content`);
    assert.equal(content.status, 200);
    assert.deepEqual(Buffer.from(await content.arrayBuffer()), raw);
    const facts = JSON.parse(Buffer.from(content.headers.get('x-sealpost-seal') ?? '', 'base64url').toString('utf8'));
    const record = await (await get(`/v1/sealed/${id}`)).json();
    assert.deepEqual(facts, {
      id,
      cid: record.cid,
      sha256: sha256(raw),
      sealedAt: record.sealedAt,
      pins: record.pins.map(({ cluster, status }: { cluster: string; status: string }) => ({ cluster, status })),
    });
  });

  it('stores only ciphertext on IPFS: the content at the CID is not the message', async () => {
    const raw = rawMessage({ body: 'a very recognisable secret sentence' });
    const { cid } = await (await postSeal(service(), raw)).json();
    const stored = Buffer.from(
      await (await fetch(`${standIn.proxyUrl}/api/v0/cat?arg=${cid}`, { method: 'POST' })).arrayBuffer(),
    );
    assert.equal(stored.length, raw.length + 1 + 12 + 16, 'version byte, nonce and tag around the ciphertext');
    assert.equal(stored[0], 1);
    assert.ok(!stored.includes(Buffer.from('recognisable secret')), 'the plaintext is not on IPFS');
    assert.ok(!stored.includes(Buffer.from('alice@sender.example')), 'nor its headers');
  });

  it('answers the same record with 200 when the same envelope is sealed again, and adds nothing', async () => {
    const envelopeId = randomUUID();
    const first = await postSeal(service(), rawMessage(), { envelopeId });
    assert.equal(first.status, 201);
    const adds = standIn.requests.filter((r) => r.path === '/add').length;
    const again = await postSeal(service(), rawMessage({ subject: 'changed' }), { envelopeId });
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), await first.json());
    assert.equal(standIn.requests.filter((r) => r.path === '/add').length, adds, 'no second /add');
  });

  it('seals two requests for one envelope racing each other into one record', async () => {
    const envelopeId = randomUUID();
    const [a, b] = await Promise.all([
      postSeal(service(), rawMessage(), { envelopeId }),
      postSeal(service(), rawMessage(), { envelopeId }),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [200, 201]);
    assert.equal((await a.json()).id, (await b.json()).id);
  });

  it('seals and reads back a 10 MB message, streamed both ways, its SHA-256 verified', async () => {
    const body = randomBytes(7.5 * 1024 * 1024)
      .toString('base64')
      .replace(/.{76}/g, '$&\r\n');
    const raw = rawMessage({ body });
    assert.ok(raw.length > 10 * 1000 * 1000);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < raw.length; i += 64 * 1024) controller.enqueue(raw.subarray(i, i + 64 * 1024));
        controller.close();
      },
    });
    const response = await postSeal(service(), stream);
    assert.equal(response.status, 201, await response.clone().text());
    const sealed = await response.json();
    assert.equal(sealed.sha256, sha256(raw));

    const content = await get(`/v1/sealed/${sealed.id}/content`);
    assert.equal(content.status, 200);
    assert.equal(content.headers.get('content-type'), 'message/rfc822');
    assert.equal(content.headers.get('x-sealpost-sha256'), sha256(raw));
    const back = Buffer.from(await content.arrayBuffer());
    assert.equal(back.length, raw.length);
    assert.equal(sha256(back), sha256(raw));
  });

  it('refuses a message above SEAL_MAX_MESSAGE_SIZE with 413, announced or not, and seals nothing', async () => {
    const big = rawMessage({ body: Buffer.alloc(12 * 1024 * 1024 + 1, 0x61) });
    const announced = await postSeal(service(), big);
    assert.equal(announced.status, 413);
    assert.equal((await announced.json()).errorCode, 'payload_too_large');

    const adds = standIn.requests.filter((r) => r.path === '/add').length;
    const pins = standIn.pins().size;
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < big.length; i += 256 * 1024) controller.enqueue(big.subarray(i, i + 256 * 1024));
        controller.close();
      },
    });
    const streamed = await postSeal(service(), chunked);
    assert.equal(streamed.status, 413);
    const error = await streamed.json();
    assert.equal(error.kind, 413);
    assert.match(error.message, /SEAL_MAX_MESSAGE_SIZE/);
    assert.equal(standIn.requests.filter((r) => r.path === '/add').length, adds + 1, 'the upload had begun');
    assert.equal(standIn.pins().size, pins, 'and was abandoned: nothing pinned');
    const rows = await sql<{
      n: number;
    }>`select count(*)::int as n from seal.sealed_messages where size > ${12 * 1024 * 1024}`.execute(seal.database.db);
    assert.equal(rows.rows[0]!.n, 0);
  });

  it('records the language X-Sealpost-Language gives a recipient and puts it in the reader link', async () => {
    const raw = rawMessage({
      to: 'bob@rcpt.example, carol@rcpt.example, dave@rcpt.example',
      headers: [
        'X-Sealpost-Language: Bob@RCPT.example=de',
        'X-Sealpost-Language: <carol@rcpt.example>=fr-CH',
        'X-Sealpost-Language: dave@rcpt.example=es',
      ],
    });
    const response = await postSeal(service(), raw, { envelopeRecipients: 'bob@rcpt.example' });
    assert.equal(response.status, 201, await response.clone().text());
    const body = await response.json();
    assert.deepEqual(body.recipients, [
      { email: 'bob@rcpt.example', method: 'email', language: 'de', link: `https://read.example/m/${body.id}?lang=de` },
      {
        email: 'carol@rcpt.example',
        method: 'email',
        language: 'fr',
        link: `https://read.example/m/${body.id}?lang=fr`,
      },
      // A language Sealpost does not write in is left to the default, not refused: the message must arrive.
      { email: 'dave@rcpt.example', method: 'email', link: `https://read.example/m/${body.id}` },
    ]);
    const one = await get(`/v1/sealed/${body.id}/recipients/bob@rcpt.example`);
    assert.deepEqual(await one.json(), { email: 'bob@rcpt.example', method: 'email', language: 'de' });
  });

  it('refuses malformed messages with 400 error objects before anything reaches IPFS', async () => {
    const adds = () => standIn.requests.filter((r) => r.path === '/add').length;
    const before = adds();
    const cases: Array<[string, Buffer, string | undefined, RegExp, string]> = [
      [
        'no From',
        Buffer.from('To: bob@rcpt.example\r\nSubject: x\r\n\r\nbody'),
        undefined,
        /no From/,
        'validation_failed',
      ],
      ['a From that is no address', rawMessage({ from: 'not an address' }), undefined, /From/, 'validation_failed'],
      ['no recipients', rawMessage({ to: '' }), undefined, /no recipients/, 'validation_failed'],
      ['not a message at all', Buffer.from('\x00\x01\x02 binary junk'), undefined, /no From/, 'validation_failed'],
      [
        'a mobile header without =',
        rawMessage({ mobiles: ['bob@rcpt.example +41791234567'] }),
        undefined,
        /X-Sealpost-Mobile/,
        'invalid_mobile',
      ],
      [
        'a mobile that is not a number',
        rawMessage({ mobiles: ['bob@rcpt.example=+41 12'] }),
        undefined,
        /not a valid phone number/,
        'invalid_mobile',
      ],
      [
        'a mobile without country code',
        rawMessage({ mobiles: ['bob@rcpt.example=0791234567'] }),
        undefined,
        /international form/,
        'invalid_mobile',
      ],
      [
        'a mobile for a bad address',
        rawMessage({ mobiles: ['bob@=+41791234567'] }),
        undefined,
        /not a valid email address/,
        'invalid_email',
      ],
      [
        'two mobiles for one recipient',
        rawMessage({ mobiles: ['bob@rcpt.example=+41791234567', 'BOB@rcpt.example=+41791234568'] }),
        undefined,
        /two numbers/,
        'invalid_mobile',
      ],
      [
        'a language header without =',
        rawMessage({ headers: ['X-Sealpost-Language: de'] }),
        undefined,
        /X-Sealpost-Language/,
        'validation_failed',
      ],
      [
        'a language that is no language tag',
        rawMessage({ headers: ['X-Sealpost-Language: bob@rcpt.example=<script>'] }),
        undefined,
        /X-Sealpost-Language/,
        'validation_failed',
      ],
      [
        'a bad envelope recipient',
        rawMessage(),
        'bob@rcpt.example, not-an-address',
        /X-Sealpost-Envelope-Recipients/,
        'invalid_email',
      ],
    ];
    for (const [name, raw, envelopeRecipients, message, errorCode] of cases) {
      const response = await postSeal(service(), raw, { envelopeRecipients });
      assert.equal(response.status, 400, name);
      const error = await response.json();
      assert.equal(error.kind, 400, name);
      assert.equal(error.errorCode, errorCode, name);
      assert.match(error.message, message, name);
      assert.match(error.id, /^[0-9a-f-]{36}$/, name);
    }
    assert.equal(adds(), before);
  });

  it('seals one with only envelope recipients (all Bcc), one whose mobile header names a non-recipient', async () => {
    const response = await postSeal(service(), rawMessage({ to: '', mobiles: ['someone@else.example=+41791234567'] }), {
      envelopeRecipients: 'hidden@bcc.example',
    });
    assert.equal(response.status, 201);
    assert.deepEqual(
      (await response.json()).recipients.map((r: { email: string; method: string }) => [r.email, r.method]),
      [['hidden@bcc.example', 'email']],
    );
  });

  it("lists one recipient's seals, newest first, with that recipient's method; pages back with before", async () => {
    const who = `reader-${randomUUID().slice(0, 8)}@list.example`;
    const sealedFor = async (parts: Parameters<typeof rawMessage>[0]) =>
      (await (await postSeal(service(), rawMessage(parts))).json()) as { id: string };
    const first = await sealedFor({ to: who, subject: 'first' });
    const other = await sealedFor({ to: 'someone-else@list.example', subject: 'not hers' });
    const second = await sealedFor({
      to: 'a@list.example',
      cc: who,
      subject: 'second',
      mobiles: [`${who}=+41 79 123 45 67`],
    });
    const list = async (query = '') => {
      const response = await get(`/v1/recipients/${encodeURIComponent(` ${who.toUpperCase()} `)}/sealed${query}`);
      assert.equal(response.status, 200);
      return (
        (await response.json()) as {
          sealed: Array<{
            id: string;
            subject: string;
            sealedAt: string;
            recipient: { email: string; method: string; mobile?: string };
          }>;
        }
      ).sealed;
    };
    const all = await list();
    assert.deepEqual(
      all.map((entry) => entry.subject),
      ['second', 'first'],
      'newest first, only hers',
    );
    assert.ok(!all.some((entry) => entry.id === other.id));
    assert.deepEqual(all[0]!.recipient, { email: who, method: 'sms', mobile: '+41791234567', mobileSource: 'header' });
    assert.deepEqual(all[1]!.recipient, { email: who, method: 'email' });
    assert.equal(all[0]!.id, second.id);
    assert.deepEqual(
      (await list('?limit=1')).map((entry) => entry.id),
      [second.id],
    );
    assert.deepEqual(
      (await list(`?limit=1&before=${encodeURIComponent(all[0]!.sealedAt)}`)).map((entry) => entry.id),
      [first.id],
    );
    assert.deepEqual(await (await get('/v1/recipients/nobody%40list.example/sealed')).json(), { sealed: [] });
    assert.equal((await get(`/v1/recipients/${encodeURIComponent(who)}/sealed`, 'wrong-token')).status, 401);
    assert.equal((await get('/v1/recipients/not-an-address/sealed')).status, 400);
  });

  it('requires the service token, the envelope id and message/rfc822', async () => {
    const raw = rawMessage();
    const noToken = await fetch(`${seal.url}/v1/seal`, {
      method: 'POST',
      headers: { 'content-type': 'message/rfc822', 'x-sealpost-envelope-id': randomUUID() },
      body: new Uint8Array(raw),
    });
    assert.equal(noToken.status, 401);
    const adminToken = await postSeal({ url: seal.url, serviceToken: seal.adminToken }, raw);
    assert.equal(adminToken.status, 401);
    const noEnvelope = await fetch(`${seal.url}/v1/seal`, {
      method: 'POST',
      headers: { authorization: `Bearer ${seal.serviceToken}`, 'content-type': 'message/rfc822' },
      body: new Uint8Array(raw),
    });
    assert.equal(noEnvelope.status, 400);
    assert.match((await noEnvelope.json()).message, /x-sealpost-envelope-id/);
    for (const type of ['application/json', 'text/plain', 'application/octet-stream']) {
      const wrongType = await postSeal(service(), raw, { headers: { 'content-type': type } });
      assert.equal(wrongType.status, 415, type);
      assert.match((await wrongType.json()).message, /message\/rfc822/);
    }
    assert.equal((await get(`/v1/sealed/${randomUUID()}`)).status, 404);
    assert.equal((await get(`/v1/sealed/${randomUUID()}`, seal.adminToken)).status, 401);
  });

  it('answers 503 when the primary cluster is down, so that the exchange retries', async () => {
    const down = await startStandIn();
    const other = await startSealOnStandIn(down);
    try {
      await down.close();
      const response = await postSeal({ url: other.url, serviceToken: other.serviceToken }, rawMessage());
      assert.equal(response.status, 503);
      const error = await response.json();
      assert.equal(error.errorCode, 'unavailable');
      assert.match(error.message, new RegExp(`primary IPFS cluster.*127\\.0\\.0\\.1:${down.port}.*ECONNREFUSED`));
      assert.equal((await fetch(`${other.url}/readyz`)).status, 503, 'not ready without its primary cluster');
    } finally {
      await other.stop();
    }
  });

  it('is ready when the primary cluster answers GET /id', async () => {
    const ready = await fetch(`${seal.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal((await ready.json()).checks.ipfsCluster, 'ok');
  });
});

describe('tampered content is detected and never served', () => {
  let standIn: StandIn;
  let seal: ServiceUnderTest;
  const get = (path: string) =>
    fetch(`${seal.url}${path}`, { headers: { authorization: `Bearer ${seal.serviceToken}` } });
  const sealOne = async (body: string) =>
    (await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, rawMessage({ body }))).json();
  const sealed = () => seal.database.db.withSchema('seal');

  before(async () => {
    standIn = await startStandIn();
    seal = await startSealOnStandIn(standIn);
  });
  after(async () => {
    await seal?.stop();
    await standIn?.close();
  });

  async function blockFiles(dir: string): Promise<string[]> {
    const entries = await readdir(dir, { withFileTypes: true, recursive: true });
    return entries
      .filter((entry) => entry.isFile() && entry.name.endsWith('.data'))
      .map((entry) => join(entry.parentPath, entry.name));
  }

  it('refuses with 502 when a block of the ciphertext was altered on the cluster', async () => {
    const before = new Set(await blockFiles(join(standIn.dataDir, 'blocks')));
    const { id } = await sealOne('the original words');
    assert.equal((await get(`/v1/sealed/${id}/content`)).status, 200);
    const added = (await blockFiles(join(standIn.dataDir, 'blocks'))).filter((file) => !before.has(file));
    assert.equal(added.length, 1, 'a small message is one block');
    const block = await readFile(added[0]!);
    const middle = Math.floor(block.length / 2);
    block.writeUInt8(block.readUInt8(middle) ^ 0x01, middle);
    await writeFile(added[0]!, block);

    const response = await get(`/v1/sealed/${id}/content`);
    assert.equal(response.status, 502);
    assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
    const error = await response.json();
    assert.equal(
      error.errorCode,
      'seal_broken',
      'a broken seal has its own errorCode: it is final, not a failure for now',
    );
    assert.equal(
      error.cid,
      (await sealed().selectFrom('sealed_messages').select('cid').where('id', '=', id).executeTakeFirstOrThrow()).cid,
    );
    assert.match(error.message, /failed verification and is not served: .*failed authentication/);
    assert.ok(seal.logs.some((line) => line.msg === 'sealed content failed verification: not served'));
  });

  it('reads a message over IN_MEMORY_READ_BYTES through a temp file, and refuses it too once altered', async () => {
    const before = new Set(await blockFiles(join(standIn.dataDir, 'blocks')));
    const body = randomBytes(1.2 * 1024 * 1024)
      .toString('base64')
      .replace(/.{76}/g, '$&\r\n');
    const raw = rawMessage({ body });
    assert.ok(raw.length > IN_MEMORY_READ_BYTES);
    const { id } = await (await postSeal({ url: seal.url, serviceToken: seal.serviceToken }, raw)).json();
    const read = await get(`/v1/sealed/${id}/content`);
    assert.equal(read.status, 200);
    assert.deepEqual(Buffer.from(await read.arrayBuffer()), raw);

    const added = (await blockFiles(join(standIn.dataDir, 'blocks'))).filter((file) => !before.has(file));
    assert.ok(added.length > 1, 'a large message is several blocks');
    // A leaf (the largest block), not the root node: the content then still comes, altered.
    const blocks = await Promise.all(added.map(async (file) => ({ file, data: await readFile(file) })));
    const { file: leaf, data: block } = blocks.sort((a, b) => b.data.length - a.data.length)[0]!;
    const middle = Math.floor(block.length / 2);
    block.writeUInt8(block.readUInt8(middle) ^ 0x01, middle);
    await writeFile(leaf, block);
    const response = await get(`/v1/sealed/${id}/content`);
    assert.equal(response.status, 502);
    const error = await response.json();
    assert.equal(error.errorCode, 'seal_broken');
    assert.match(error.message, /failed verification and is not served: .*failed authentication/);
  });

  it("refuses when the record points at another message's content", async () => {
    const first = await sealOne('first message');
    const second = await sealOne('second message');
    await sealed().updateTable('sealed_messages').set({ cid: second.cid }).where('id', '=', first.id).execute();
    const response = await get(`/v1/sealed/${first.id}/content`);
    assert.equal(response.status, 502);
    assert.match((await response.json()).message, /not this message/);
    assert.equal((await get(`/v1/sealed/${second.id}/content`)).status, 200);
  });

  it('refuses when the plaintext does not match the recorded SHA-256, read in memory or through a file', async () => {
    for (const body of ['hash me', 'x'.repeat(IN_MEMORY_READ_BYTES)]) {
      const { id } = await sealOne(body);
      await sealed()
        .updateTable('sealed_messages')
        .set({ sha256: 'f'.repeat(64) })
        .where('id', '=', id)
        .execute();
      const response = await get(`/v1/sealed/${id}/content`);
      assert.equal(response.status, 502);
      assert.match((await response.json()).message, /does not match the sealed f{64}/);
    }
  });

  it('refuses a wrapped key moved onto another record', async () => {
    const first = await sealOne('one');
    const second = await sealOne('two');
    const { wrapped_key } = await sealed()
      .selectFrom('sealed_messages')
      .select('wrapped_key')
      .where('id', '=', second.id)
      .executeTakeFirstOrThrow();
    await sealed()
      .updateTable('sealed_messages')
      .set({ wrapped_key, cid: second.cid, sha256: second.sha256 })
      .where('id', '=', first.id)
      .execute();
    const response = await get(`/v1/sealed/${first.id}/content`);
    assert.equal(response.status, 500);
    assert.match(
      (await response.json()).message,
      /does not open: secret does not open with key version 1 \(SEAL_MASTER_KEY\)/,
    );
  });

  it('answers 503 when no cluster has the content', async () => {
    const { id } = await sealOne('gone');
    await sealed()
      .updateTable('sealed_messages')
      .set({ cid: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG' })
      .where('id', '=', id)
      .execute();
    const response = await get(`/v1/sealed/${id}/content`);
    assert.equal(response.status, 503);
    assert.match((await response.json()).message, /could not be read from any IPFS cluster: .*answered 500/);
  });
});
