import type { DkimSigner } from '../../kernel/dkim.ts';
import { relayMessage } from './relay-message.ts';
import { LineTooLong, SevenBitImpossible } from './seven-bit.ts';
import {
  DeliveryError,
  X_DIAGNOSTIC,
  defineOutboundStrategy,
  type MailTransport,
  type OutboundStrategy,
} from './types.ts';

export const smtpStrategy = defineOutboundStrategy({
  name: 'smtp',
  description: 'relayed unchanged',
  create: ({ settings, transport, dkim }) => createSmtpOutbound(transport, { hostname: settings.smtpHostname, dkim }),
});

/**
 * The `smtp` strategy: the stored message goes to the relay with the envelope as it was accepted (MAIL
 * FROM and every RCPT TO, Bcc recipients included) and the MAIL FROM parameters it came with
 * (BODY=8BITMIME, SMTPUTF8; BODY=8BITMIME also when the intake found 8-bit bytes the client did not
 * declare). What the relay hop changes is in relay-message.ts: a missing Date or Message-ID, no Bcc field,
 * a 7-bit re-encoding for a relay without 8BITMIME, parts with lines over 998 octets re-encoded, the DKIM
 * signature.
 */
export function createSmtpOutbound(
  transport: MailTransport,
  options: { hostname: string; dkim?: DkimSigner },
): OutboundStrategy {
  return {
    async deliver(envelope, openPayload) {
      let sevenBit = false;
      if (envelope.body_8bitmime || envelope.smtputf8) {
        const offers = await transport.capabilities();
        if (envelope.smtputf8 && !offers.smtpUtf8) {
          // RFC 6531 §3.4: such a message may not be handed to a server without SMTPUTF8.
          throw new DeliveryError(
            true,
            'the relay does not offer SMTPUTF8, which this message needs (UTF-8 addresses or headers)',
            {
              status: '5.6.7',
              diagnostic: `${X_DIAGNOSTIC}; the relay does not offer SMTPUTF8 (RFC 6531), which this message needs`,
            },
          );
        }
        sevenBit = envelope.body_8bitmime && !offers.eightBitMime;
      }
      let open;
      try {
        open = await relayMessage(envelope, openPayload, {
          hostname: options.hostname,
          dkim: options.dkim,
          sevenBit,
          longLines: envelope.long_lines,
        });
      } catch (error) {
        if (error instanceof LineTooLong) {
          // RFC 5322 §2.1.1 allows no such line, and breaking it would change the message.
          throw new DeliveryError(
            true,
            `the message has a line over 998 octets that cannot be made shorter: ${error.message}`,
            {
              status: '5.6.0',
              diagnostic: `${X_DIAGNOSTIC}; ${error.message}`,
            },
          );
        }
        if (!(error instanceof SevenBitImpossible)) throw error;
        throw new DeliveryError(
          true,
          `the relay does not offer 8BITMIME and the message cannot be made 7-bit: ${error.message}`,
          {
            status: '5.6.3',
            diagnostic: `${X_DIAGNOSTIC}; the relay does not offer 8BITMIME (RFC 6152) and ${error.message}`,
          },
        );
      }
      const report = await transport.send({
        envelope: { from: envelope.sender, to: envelope.recipients },
        raw: await open(),
        use8BitMime: envelope.body_8bitmime && !sevenBit,
        smtputf8: envelope.smtputf8,
      });
      return {
        rejected: report.rejected,
        detail: report.response + (sevenBit ? ' (re-encoded to 7-bit: the relay lacks 8BITMIME)' : ''),
      };
    },
  };
}
