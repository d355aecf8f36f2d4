import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SubmissionPolicy } from './submission-policy.ts';

describe('the submission policy', () => {
  it('answers each client by its network, the same when asked again and after thousands of others', async () => {
    const policy = await SubmissionPolicy.load({
      allowedNetworks: [
        { address: '127.0.0.0', prefix: 8, family: 'ipv4' },
        { address: 'fd00::', prefix: 8, family: 'ipv6' },
      ],
      usersFile: undefined,
      senderDomains: undefined,
    });
    const expected: Array<[string, boolean]> = [
      ['127.0.0.1', true],
      ['::ffff:127.0.0.2', true],
      ['fd12::1', true],
      ['10.0.0.1', false],
      ['::1', false],
      ['not an address', false],
    ];
    for (let pass = 0; pass < 2; pass++) {
      for (const [client, allowed] of expected) assert.equal(policy.isAllowedClient(client), allowed, client);
      // More clients than the policy remembers answers for.
      for (let i = 0; i < 3000; i++) {
        assert.equal(policy.isAllowedClient(`10.1.${i >> 8}.${i & 255}`), false);
        assert.equal(policy.isAllowedClient(`127.1.${i >> 8}.${i & 255}`), true);
      }
    }
  });
});
