import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { SMTPServer } from 'smtp-server';
import { probeRelay } from './relay-capabilities.ts';

describe('probeRelay', () => {
  it("reads the relay's EHLO answer, greeting it with the name it is given (SMTP_HOSTNAME)", async () => {
    const names: string[] = [];
    let closed!: () => void;
    const done = new Promise<void>((resolve) => (closed = resolve));
    const relay = new SMTPServer({
      disableReverseLookup: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      hide8BITMIME: true,
      logger: false,
      onClose(session) {
        names.push(session.hostNameAppearsAs);
        closed();
      },
    });
    relay.listen(0, '127.0.0.1');
    await once(relay.server, 'listening');
    try {
      const address = relay.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const offers = await probeRelay(`smtp://127.0.0.1:${port}`, 5_000, 'mx.sealpost.test');
      assert.deepEqual(offers, { eightBitMime: false, smtpUtf8: true });
      await done;
      assert.deepEqual(names, ['mx.sealpost.test']);
    } finally {
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });
});
