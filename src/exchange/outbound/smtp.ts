import type { MailTransport } from './mail-transport.ts';
import type { Outbound } from './types.ts';

/**
 * The `smtp` path: the stored raw message goes to the relay unchanged, with the envelope as it was
 * accepted (MAIL FROM and every RCPT TO, Bcc recipients included). Nothing is re-encoded or added, so
 * the bytes the relay receives are the bytes Sealpost acknowledged.
 */
export function createSmtpOutbound(transport: MailTransport): Outbound {
  return {
    name: 'smtp',
    async deliver(envelope, openPayload) {
      const raw = await openPayload();
      const report = await transport.send({ envelope: { from: envelope.sender, to: envelope.recipients }, raw });
      return { rejected: report.rejected, detail: report.response };
    },
  };
}
