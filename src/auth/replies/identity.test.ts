import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { replyIdentity } from './identity.ts';

describe('who a reply is from', () => {
  const settings = { replyFrom: 'Example Org <replies@example.org>', fromRecipient: false };

  it('is the organisation, the recipient named in the display name and answering through Reply-To', () => {
    assert.deepEqual(replyIdentity({ email: 'alice@rcpt.example', name: 'Alice Example' }, settings), {
      from: { name: 'Alice Example (alice@rcpt.example) via Example Org', address: 'replies@example.org' },
      replyTo: { name: 'Alice Example', address: 'alice@rcpt.example' },
      envelopeFrom: 'replies@example.org',
    });
  });

  it('names the recipient by address if unnamed, the organisation by domain if REPLY_FROM has no name', () => {
    const identity = replyIdentity(
      { email: 'alice@rcpt.example' },
      { replyFrom: 'replies@example.org', fromRecipient: false },
    );
    assert.deepEqual(identity.from, { name: 'alice@rcpt.example via example.org', address: 'replies@example.org' });
  });

  it('keeps line breaks, quotes and brackets of a display name out of the header', () => {
    const identity = replyIdentity({ email: 'alice@rcpt.example', name: 'Eve"\r\nBcc: <x@evil.example>' }, settings);
    assert.equal(identity.from.name, 'Eve Bcc: x@evil.example (alice@rcpt.example) via Example Org');
  });

  it("is the recipient's own address with REPLY_FROM_RECIPIENT, with no Reply-To", () => {
    assert.deepEqual(
      replyIdentity({ email: 'alice@rcpt.example', name: 'Alice' }, { ...settings, fromRecipient: true }),
      {
        from: { name: 'Alice', address: 'alice@rcpt.example' },
        replyTo: undefined,
        envelopeFrom: 'alice@rcpt.example',
      },
    );
  });
});
