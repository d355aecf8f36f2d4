import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { SEALPOST_BIN } from '../../test/support/sealpost-process.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../test/support/services.ts';
import { exchangeService } from '../exchange/service.ts';
import { confirm } from './admin-client.ts';

const run = promisify(execFile);

describe('sealpost rules list|add|move|remove against a running exchange', () => {
  let exchange: ServiceUnderTest;

  before(async () => {
    exchange = await startServiceForTest(exchangeService, { env: { DELIVERY_ENABLED: 'false' } });
  });
  after(() => exchange?.stop());

  const rules = (args: string[]) =>
    run(process.execPath, [SEALPOST_BIN, 'rules', ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        EXCHANGE_URL: exchange.url,
        ADMIN_TOKEN: exchange.adminToken,
      },
    });
  const fails = (args: string[], code: number, stderr: RegExp) =>
    assert.rejects(rules(args), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, code, error.stderr);
      assert.match(error.stderr, stderr);
      return true;
    });
  const stored = async () => {
    const response = await fetch(`${exchange.url}/v1/config`, {
      headers: { authorization: `Bearer ${exchange.adminToken}` },
    });
    return ((await response.json()) as { rules: Array<{ name: string; priority: number; configuration: unknown }> })
      .rules;
  };

  it('says that a database without rules refuses every message, and how to add one', async () => {
    const { stdout } = await rules(['list']);
    assert.match(
      stdout,
      /No delivery rules: every message is refused \(451 4\.3\.0\)\. Add one with `sealpost rules add`/,
    );
  });

  it('adds rules from flags, as POST /v1/config stores them, and lists them in execution order', async () => {
    assert.match(
      (await rules(['add', '--name', 'relay the rest', '--priority', '100', '--outbound', 'smtp'])).stdout,
      /Added rule "relay the rest" \(priority 100, [0-9a-f-]{36}\)/,
    );
    await rules([
      'add',
      '--name',
      'seal tagged',
      '--priority',
      '10',
      '--subject-contains',
      '[secure]',
      '--strip-subject-tag',
      '--outbound',
      'seal',
    ]);
    await rules([
      'add',
      '--name',
      'outside',
      '--priority',
      '20',
      '--recipient-domain',
      '!org.example',
      '--outbound',
      'seal,smtp',
    ]);
    const all = await stored();
    assert.deepEqual(
      all.map((rule) => [rule.name, rule.priority]),
      [
        ['seal tagged', 10],
        ['outside', 20],
        ['relay the rest', 100],
      ],
    );
    assert.deepEqual(all[0]!.configuration, {
      params: { channel: 'smtp', subjectContains: '[secure]' },
      outbound: ['seal'],
      stripSubjectTag: true,
    });
    assert.deepEqual(all[1]!.configuration, {
      params: { channel: 'smtp', recipientDomains: ['!org.example'] },
      outbound: ['seal', 'smtp'],
    });
    const { stdout } = await rules(['list']);
    const lines = stdout.trimEnd().split('\n').slice(1);
    assert.match(
      lines[0]!,
      /^ +10 +seal tagged +smtp subjectContains=\[secure\] stripSubjectTag -> seal +[0-9a-f-]{36}$/,
    );
    assert.match(lines[1]!, /^ +20 +outside +smtp recipientDomains=\["!org\.example"\] -> seal,smtp/);
    assert.match(lines[2]!, /^ +100 +relay the rest +smtp \(every message\) -> smtp/);
  });

  it('moves a rule by priority, or before / after another, keeping the rest of it', async () => {
    await rules(['move', 'relay the rest', '--before', 'seal tagged']);
    assert.deepEqual(
      (await stored()).map((rule) => [rule.name, rule.priority]),
      [
        ['relay the rest', 9],
        ['seal tagged', 10],
        ['outside', 20],
      ],
    );
    await rules(['move', 'relay the rest', '--after', 'outside']);
    await rules(['move', 'seal tagged', '--priority', '30']);
    const all = await stored();
    assert.deepEqual(
      all.map((rule) => [rule.name, rule.priority]),
      [
        ['outside', 20],
        ['relay the rest', 21],
        ['seal tagged', 30],
      ],
    );
    assert.deepEqual(all[2]!.configuration, {
      params: { channel: 'smtp', subjectContains: '[secure]' },
      outbound: ['seal'],
      stripSubjectTag: true,
    });
  });

  it('asks before removing: without a terminal and without --yes nothing is removed', async () => {
    await fails(['remove', 'outside'], 2, /Remove rule "outside".*standard input is not a terminal; add --yes/);
    assert.equal((await stored()).length, 3);
    assert.match((await rules(['remove', 'outside', '--yes'])).stdout, /Removed rule "outside"/);
    assert.deepEqual(
      (await stored()).map((rule) => rule.name),
      ['relay the rest', 'seal tagged'],
    );
  });

  it('refuses bad command lines with exit 2 and the usage, and names what the exchange refused', async () => {
    await fails(
      ['add', '--name', 'x', '--outbound', 'smtp', '--bogus'],
      2,
      /Unknown option '--bogus'[\s\S]*Usage: sealpost rules/,
    );
    await fails(['add', '--name', 'x'], 2, /--outbound seal, --outbound smtp, or both/);
    await fails(
      ['add', '--name', 'x', '--outbound', 'smtp', '--priority', 'high'],
      2,
      /--priority "high": give an integer/,
    );
    await fails(['move', 'seal tagged'], 2, /--priority N, --before RULE or --after RULE/);
    await fails(['frobnicate'], 2, /unknown rules command "frobnicate"/);
    await fails(['remove', 'no such rule', '--yes'], 1, /no rule has the id or name "no such rule"/);
    await fails(['add', '--name', 'x', '--outbound', 'fax'], 1, /answered 400: .*outbound/);
  });
});

describe('confirm (the question before a deletion)', () => {
  const terminal = (answer: string) => {
    const input = Object.assign(new PassThrough(), { isTTY: true });
    setImmediate(() => input.write(`${answer}\n`));
    return input;
  };
  const output = () => new PassThrough();

  it('goes ahead on y or yes only, and asks on the terminal', async () => {
    const asked = output();
    assert.equal(await confirm('Delete?', { yes: false, input: terminal('y'), output: asked }), true);
    assert.match(String(asked.read()), /Delete\? \[y\/N\] /);
    assert.equal(await confirm('Delete?', { yes: false, input: terminal('YES'), output: output() }), true);
    assert.equal(await confirm('Delete?', { yes: false, input: terminal(''), output: output() }), false);
    assert.equal(await confirm('Delete?', { yes: false, input: terminal('no'), output: output() }), false);
  });

  it('does not ask with --yes, and refuses without a terminal', async () => {
    assert.equal(await confirm('Delete?', { yes: true, input: new PassThrough() }), true);
    await assert.rejects(confirm('Delete?', { yes: false, input: new PassThrough() }), /not a terminal; add --yes/);
  });
});
