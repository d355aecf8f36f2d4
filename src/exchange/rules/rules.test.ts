import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { exchangeService } from '../service.ts';
import { RuleStore } from './store.ts';
import type { ExchangeTables } from '../tables.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';

describe('delivery rules API', () => {
  let exchange: ServiceUnderTest;
  let rules: RuleStore;
  const call = (method: string, path: string, body?: unknown, token = exchange.adminToken) =>
    fetch(`${exchange.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  const rule = (name: string, priority: number, channel: string, outbound: string[], sender?: string) => ({
    name,
    priority,
    configuration: { params: { channel, ...(sender ? { sender } : {}) }, outbound },
  });

  before(async () => {
    exchange = await startServiceForTest(exchangeService);
    rules = new RuleStore(exchange.database.db.withSchema('exchange') as Kysely<ExchangeTables>);
  });
  after(() => exchange.stop());
  beforeEach(async () => {
    await exchange.database.db.withSchema('exchange').deleteFrom('rules').execute();
  });

  it('creates, reads, replaces and deletes a rule', async () => {
    const created = await call('POST', '/v1/config', rule('seal inbound', 10, 'smtp', ['seal']));
    assert.equal(created.status, 201);
    const body = await created.json();
    assert.match(body.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(body.configuration, { params: { channel: 'smtp' }, outbound: ['seal'] });
    assert.ok(Date.parse(body.created_at) > 0 && Date.parse(body.updated_at) > 0);

    assert.deepEqual(await (await call('GET', `/v1/config/${body.id}`)).json(), body);
    const replaced = await call('PUT', `/v1/config/${body.id}`, rule('seal and relay', 5, 'smtp', ['seal', 'smtp']));
    assert.equal(replaced.status, 200);
    const after = await replaced.json();
    assert.equal(after.name, 'seal and relay');
    assert.deepEqual(after.configuration.outbound, ['seal', 'smtp']);
    assert.ok(Date.parse(after.updated_at) >= Date.parse(body.updated_at));

    assert.equal((await call('DELETE', `/v1/config/${body.id}`)).status, 204);
    const gone = await call('GET', `/v1/config/${body.id}`);
    assert.equal(gone.status, 404);
    assert.equal((await gone.json()).kind, 404);
    assert.equal((await call('DELETE', `/v1/config/${body.id}`)).status, 404);
  });

  it('lists rules in execution order: lower priority first, ties by creation', async () => {
    await call('POST', '/v1/config', rule('b', 20, 'smtp', ['seal']));
    await call('POST', '/v1/config', rule('a', 10, 'smtp', ['smtp']));
    await call('POST', '/v1/config', rule('c', 20, 'json', ['smtp']));
    await call('POST', '/v1/config', rule('neg', -5, 'json', ['smtp']));
    const { rules: listed } = await (await call('GET', '/v1/config')).json();
    assert.deepEqual(
      listed.map((r: { name: string }) => r.name),
      ['neg', 'a', 'b', 'c'],
    );
  });

  it('normalises the sender of a rule', async () => {
    const body = await (
      await call('POST', '/v1/config', rule('reply', 1, 'json', ['smtp'], ' Bob@Bücher.Example '))
    ).json();
    assert.equal(body.configuration.params.sender, 'Bob@xn--bcher-kva.example');
  });

  it('refuses bad rules with a 400 error object naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ ...rule('x', 1, 'fax', ['seal']) }, /^configuration\.params\.channel /],
      [{ ...rule('x', 1, 'smtp', []) }, /^configuration\.outbound must NOT have fewer than 1 items/],
      [{ ...rule('x', 1, 'smtp', ['seal', 'seal']) }, /^configuration\.outbound must NOT have duplicate items/],
      [{ ...rule('x', 1, 'smtp', ['carrier-pigeon']) }, /^configuration\.outbound\[0\] /],
      [{ ...rule('x', 1.5, 'smtp', ['seal']) }, /^priority must be integer/],
      [
        { ...rule('x', 1, 'smtp', ['seal'], 'not an address') },
        /configuration\.params\.sender "not an address" is not a valid email address/,
      ],
      [{ priority: 1, configuration: { params: { channel: 'smtp' }, outbound: ['seal'] } }, /^name is required/],
      [{ ...rule('x', 1, 'smtp', ['seal']), colour: 'red' }, /^colour is not a known field/],
      [
        {
          name: 'x',
          priority: 1,
          configuration: { params: { channel: 'smtp', recipient: 'a@b.c' }, outbound: ['seal'] },
        },
        /^configuration\.params\.recipient is not a known field/,
      ],
    ];
    for (const [body, message] of cases) {
      const res = await call('POST', '/v1/config', body);
      const error = await res.json();
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(error.kind, 400);
      assert.match(error.message, message);
    }
    assert.equal((await (await call('GET', '/v1/config')).json()).rules.length, 0, 'nothing was stored');
  });

  it('requires the admin token', async () => {
    assert.equal((await call('GET', '/v1/config', undefined, '')).status, 401);
    assert.equal((await call('POST', '/v1/config', rule('x', 1, 'smtp', ['seal']), exchange.serviceToken)).status, 401);
    const res = await fetch(`${exchange.url}/v1/config`);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
  });

  it('shows the rules API in the /swagger/ description', async () => {
    const spec = await (await fetch(`${exchange.url}/openapi.json`)).json();
    for (const path of ['/v1/config', '/v1/config/{id}']) assert.ok(spec.paths[path], path);
    assert.deepEqual(Object.keys(spec.paths['/v1/config/{id}']).sort(), ['delete', 'get', 'put']);
    assert.ok(spec.paths['/v1/config'].post.requestBody.content['application/json'].schema.properties.configuration);
    const params =
      spec.paths['/v1/config'].post.requestBody.content['application/json'].schema.properties.configuration.properties
        .params.properties;
    for (const field of ['recipientDomains', 'senderDomains', 'subjectContains', 'header'])
      assert.ok(params[field], field);
    const dryRun = spec.paths['/v1/config/match'].post;
    assert.deepEqual(Object.keys(dryRun.requestBody.content['application/json'].schema.properties).sort(), [
      'channel',
      'headers',
      'recipients',
      'sender',
      'subject',
    ]);
    assert.ok(dryRun.responses['200'] && dryRun.responses['400']);
    assert.equal((await fetch(`${exchange.url}/swagger/`)).status, 200);
  });

  describe('matching', () => {
    it('picks the first rule by priority whose channel and sender match', async () => {
      await rules.create(rule('json catch-all', 50, 'json', ['seal']) as any);
      await rules.create(rule('replies from bob', 10, 'json', ['smtp'], 'bob@example.com') as any);
      await rules.create(rule('smtp', 1, 'smtp', ['seal', 'smtp']) as any);
      assert.equal((await rules.match('json', 'Bob@EXAMPLE.com')).name, 'replies from bob');
      assert.equal((await rules.match('json', 'alice@example.com')).name, 'json catch-all');
      assert.equal((await rules.match('smtp', 'bob@example.com')).name, 'smtp');
    });

    it('refuses with a 503 that says a rule must be created first when there is none', async () => {
      await assert.rejects(rules.match('smtp', 'a@b.example'), (error: any) => {
        assert.equal(error.status, 503);
        assert.match(error.message, /No delivery rule exists yet: create one with POST \/v1\/config/);
        return true;
      });
    });

    it("answers MAIL FROM's lookup from one read of the rules per lifetime, not a query per message", async () => {
      let queries = 0;
      const counted = exchange.database.db.withSchema('exchange').withPlugin({
        transformQuery: (args) => args.node,
        transformResult: async (args) => {
          queries += 1;
          return args.result;
        },
      }) as Kysely<ExchangeTables>;
      const store = new RuleStore(counted, { snapshotTtlMs: 60_000 });
      await store.create(rule('smtp', 1, 'smtp', ['seal']) as any);
      queries = 0;
      await store.hasRoute('smtp', 'first@b.example'); // no snapshot yet: the match, and the snapshot's read
      for (let i = 0; i < 200 && queries < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setImmediate(resolve));
      for (let i = 0; i < 50; i++) await store.hasRoute('smtp', `user${i}@b.example`);
      assert.equal(queries, 2);
      await assert.rejects(store.hasRoute('json', 'a@b.example'), /No delivery rule matches channel json/);
      assert.equal(queries, 4, 'no rule in the snapshot: PostgreSQL decides (the match, and whether any rule exists)');
    });

    it('refuses with a 503 naming channel and sender when rules exist but none matches', async () => {
      await rules.create(rule('smtp only', 1, 'smtp', ['seal']) as any);
      await assert.rejects(
        rules.match('json', 'a@b.example'),
        /No delivery rule matches channel json and sender a@b.example/,
      );
    });
  });

  describe('criteria and the dry run (POST /v1/config/match)', () => {
    const withCriteria = (name: string, priority: number, params: object, outbound: string[], more = {}) => ({
      name,
      priority,
      configuration: { params: { channel: 'smtp', ...params }, outbound, ...more },
    });
    const match = async (sample: object) => {
      const response = await call('POST', '/v1/config/match', sample);
      return { status: response.status, body: await response.json() };
    };
    const ruleNames = (body: { recipients: Array<{ rule?: { name: string } }> }) =>
      body.recipients.map((r) => r.rule?.name ?? null);

    it('stores criteria normalised and shows them back; rules without criteria stay as before', async () => {
      const created = await call(
        'POST',
        '/v1/config',
        withCriteria(
          'outside',
          1,
          {
            recipientDomains: ['!Org.Example', 'BÜCHER.example'],
            subjectContains: '[secure]',
            header: { name: 'X-Sealpost-Seal', value: ' yes ' },
          },
          ['seal'],
          { stripSubjectTag: true },
        ),
      );
      assert.equal(created.status, 201);
      assert.deepEqual((await created.json()).configuration, {
        params: {
          channel: 'smtp',
          recipientDomains: ['!org.example', 'xn--bcher-kva.example'],
          subjectContains: '[secure]',
          header: { name: 'X-Sealpost-Seal', value: 'yes' },
        },
        outbound: ['seal'],
        stripSubjectTag: true,
      });
      const plain = await (await call('POST', '/v1/config', rule('plain', 2, 'smtp', ['smtp']))).json();
      assert.deepEqual(plain.configuration, { params: { channel: 'smtp' }, outbound: ['smtp'] });
      const row = await rules.get(plain.id);
      assert.equal(row.criteria, null, 'a rule without criteria is matched in SQL, as before');
    });

    it('refuses criteria that are not valid', async () => {
      for (const [params, more, text] of [
        [{ recipientDomains: ['not a domain'] }, {}, /recipientDomains/],
        [{ recipientDomains: ['!bad_domain!.example'] }, {}, /recipientDomains/],
        [{ senderDomains: [] }, {}, /senderDomains/],
        [{ subjectContains: '' }, {}, /subjectContains/],
        [{}, { stripSubjectTag: true }, /stripSubjectTag needs/],
        [{ header: { name: 'X Bad', value: 'v' } }, {}, /header/],
        [{ unknown: 1 }, {}, /unknown|additional/i],
      ] as const) {
        const response = await call('POST', '/v1/config', withCriteria('bad', 1, params, ['seal'], more));
        const body = await response.json();
        assert.equal(response.status, 400, JSON.stringify(params));
        assert.equal(body.kind, 400);
        assert.match(body.message, text);
      }
    });

    it('answers per recipient for a subject tag, outside recipients and a header', async () => {
      await call(
        'POST',
        '/v1/config',
        withCriteria('tag', 1, { subjectContains: '[secure]' }, ['seal'], {
          stripSubjectTag: true,
        }),
      );
      await call(
        'POST',
        '/v1/config',
        withCriteria('header', 2, { header: { name: 'X-Sealpost-Seal', value: 'yes' } }, ['seal']),
      );
      await call('POST', '/v1/config', withCriteria('outside', 3, { recipientDomains: ['!org.example'] }, ['seal']));
      await call('POST', '/v1/config', rule('rest', 4, 'smtp', ['smtp']));

      const tagged = await match({
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['colleague@org.example'],
        subject: '=?UTF-8?Q?=5BSecure=5D_Vertrag?=',
      });
      assert.equal(tagged.status, 200);
      assert.deepEqual(tagged.body.recipients[0].outbound, ['seal']);
      assert.equal(tagged.body.recipients[0].rule.name, 'tag');
      assert.equal(tagged.body.recipients[0].rule.priority, 1);
      assert.equal(tagged.body.recipients[0].stripSubjectTag, '[secure]');

      const untagged = await match({
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['colleague@org.example'],
        subject: 'Plans',
      });
      assert.deepEqual(ruleNames(untagged.body), ['rest']);
      assert.deepEqual(untagged.body.recipients[0].outbound, ['smtp']);

      const header = await match({
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['colleague@org.example'],
        headers: [{ name: 'x-sealpost-seal', value: 'yes' }],
      });
      assert.deepEqual(ruleNames(header.body), ['header']);

      const split = await match({
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['colleague@org.example', 'customer@example.com'],
        subject: 'Offer',
      });
      assert.deepEqual(ruleNames(split.body), ['rest', 'outside']);
      assert.deepEqual(
        split.body.recipients.map((r: { outbound: string[] }) => r.outbound),
        [['smtp'], ['seal']],
      );
      assert.equal(split.body.envelopes, 2);
    });

    it('splits a JSON message per recipient, and the 202 names every part', async () => {
      await call('POST', '/v1/config', {
        name: 'outside',
        priority: 1,
        configuration: { params: { channel: 'json', recipientDomains: ['!org.example'] }, outbound: ['seal'] },
      });
      await call('POST', '/v1/config', rule('rest', 2, 'json', ['smtp']));
      const submit = (to: string[]) =>
        fetch(`${exchange.url}/v1/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${exchange.serviceToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ from: 'dana@org.example', to, subject: 'Offer', text: 'Hello' }),
        });
      const split = await submit(['colleague@org.example', 'customer@example.com']);
      assert.equal(split.status, 202);
      const body = await split.json();
      assert.equal(body.parts.length, 2);
      assert.equal(body.parts[0], body.id);
      const envelopes = await exchange.database.db
        .withSchema('exchange')
        .selectFrom('envelopes')
        .select(['id', 'recipients', 'outbound'])
        .where('id', 'in', body.parts)
        .execute();
      const byId = new Map(envelopes.map((e) => [e.id, e]));
      assert.deepEqual(byId.get(body.parts[0])?.recipients, ['colleague@org.example']);
      assert.deepEqual(byId.get(body.parts[1])?.outbound, ['seal']);
      const whole = await (await submit(['colleague@org.example'])).json();
      assert.equal(whole.parts, undefined, 'one envelope: no parts');
    });

    it('says why no rule takes a recipient', async () => {
      await call('POST', '/v1/config', withCriteria('outside', 1, { recipientDomains: ['!org.example'] }, ['seal']));
      const answer = await match({ channel: 'smtp', sender: '', recipients: ['a@org.example', 'b@example.com'] });
      assert.equal(answer.status, 200);
      assert.deepEqual(ruleNames(answer.body), [null, 'outside']);
      assert.match(answer.body.recipients[0].reason, /rule "outside": recipient domain is not !org.example/);
      assert.equal(answer.body.envelopes, 0, 'the message would be refused');
      const none = await match({ channel: 'json', sender: '', recipients: ['a@org.example'] });
      assert.match(none.body.recipients[0].reason, /no delivery rule exists for channel json/);
    });

    it('refuses malformed samples with the error object', async () => {
      for (const [sample, text] of [
        [{ channel: 'smtp', sender: 'a@b.example' }, /recipients/],
        [{ channel: 'fax', sender: 'a@b.example', recipients: ['c@d.example'] }, /channel/],
        [{ channel: 'smtp', sender: 'a@b.example', recipients: [] }, /recipients/],
        [{ channel: 'smtp', sender: 'not an address', recipients: ['c@d.example'] }, /sender/],
        [{ channel: 'smtp', sender: 'a@b.example', recipients: ['c@d.example', 'nope'] }, /recipients\[1\]/],
        [{ channel: 'smtp', sender: 'a@b.example', recipients: ['c@d.example'], headers: [{ name: 'X' }] }, /value/],
        [{ channel: 'smtp', sender: 'a@b.example', recipients: ['c@d.example'], extra: true }, /extra|additional/i],
      ] as const) {
        const { status, body } = await match(sample);
        assert.equal(status, 400, JSON.stringify(sample));
        assert.equal(body.kind, 400);
        assert.equal(typeof body.message, 'string');
        assert.match(body.message, text, JSON.stringify(body));
      }
      assert.equal((await call('POST', '/v1/config/match', { channel: 'smtp' }, 'wrong-token')).status, 401);
    });
  });
});
