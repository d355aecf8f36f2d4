import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SEALPOST_BIN } from '../../test/support/sealpost-process.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../test/support/services.ts';
import { exchangeService } from '../exchange/service.ts';

const run = promisify(execFile);

describe('sealpost rules test (the dry run of the delivery rules)', () => {
  let exchange: ServiceUnderTest;

  before(async () => {
    exchange = await startServiceForTest(exchangeService, { env: { DELIVERY_ENABLED: 'false' } });
    for (const [name, priority, params, outbound, more] of [
      ['tag', 1, { subjectContains: '[secure]' }, ['seal'], { stripSubjectTag: true }],
      ['outside', 2, { recipientDomains: ['!org.example'] }, ['seal'], {}],
      ['rest', 3, {}, ['smtp'], {}],
    ] as const) {
      const response = await fetch(`${exchange.url}/v1/config`, {
        method: 'POST',
        headers: { authorization: `Bearer ${exchange.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name,
          priority,
          configuration: { params: { channel: 'smtp', ...params }, outbound, ...more },
        }),
      });
      assert.equal(response.status, 201, await response.text());
    }
  });
  after(() => exchange?.stop());

  const rules = (args: string[]) =>
    run(process.execPath, [SEALPOST_BIN, 'rules', 'test', ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        EXCHANGE_URL: exchange.url,
        ADMIN_TOKEN: exchange.adminToken,
      },
    });

  it('prints the rule and outbound of each recipient, and how many envelopes the message becomes', async () => {
    const { stdout } = await rules([
      '--from',
      'dana@org.example',
      '--to',
      'colleague@org.example',
      '--to',
      'customer@example.com',
    ]);
    assert.match(stdout, /^colleague@org\.example {2}rule "rest" \(priority 3, [0-9a-f-]{36}\) -> smtp$/m);
    assert.match(stdout, /^customer@example\.com {3}rule "outside" \(priority 2, [0-9a-f-]{36}\) -> seal$/m);
    assert.match(stdout, /^-- 2 envelopes$/m);
  });

  it('passes the subject and headers, and answers JSON with --json', async () => {
    const { stdout } = await rules([
      '--recipient',
      'colleague@org.example',
      '--sender',
      'dana@org.example',
      '--subject',
      '[Secure] offer',
      '--header',
      'X-Sealpost-Seal: yes',
      '--json',
    ]);
    const answer = JSON.parse(stdout);
    assert.equal(answer.recipients[0].rule.name, 'tag');
    assert.deepEqual(answer.recipients[0].outbound, ['seal']);
    assert.equal(answer.recipients[0].stripSubjectTag, '[secure]');
  });

  it('exits 1 with the error message for a malformed sample', async () => {
    await assert.rejects(rules(['--to', 'not-an-address']), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.match(error.stderr, /answered 400: recipients\[0\] "not-an-address" is not a valid email address/);
      return true;
    });
    await assert.rejects(rules(['--subject', 'x']), /give at least one recipient/);
  });
});
