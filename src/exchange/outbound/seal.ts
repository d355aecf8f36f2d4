import addressparser from 'nodemailer/lib/addressparser';
import type { DkimSigner } from '../../kernel/dkim.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { isLanguage, type Language } from '../../kernel/languages.ts';
import type { Logger } from '../../kernel/logger.ts';
import { streamWithHead } from './head-rewrite.ts';
import { composeNotification } from './notification.ts';
import { SealClient } from './seal-client.ts';
import { outgoingHead } from './subject-tag.ts';
import {
  DeliveryError,
  X_DIAGNOSTIC,
  defineOutboundStrategy,
  type FailedRecipient,
  type MailTransport,
  type OutboundStrategy,
} from './types.ts';

export const sealStrategy = defineOutboundStrategy({
  name: 'seal',
  description: 'sealed onto IPFS and each recipient notified with a reader link',
  create: ({ config, settings, transport, dkim, logger }) =>
    createSealOutbound({
      client: new SealClient({ baseUrl: settings.sealUrl, serviceToken: config.serviceToken }),
      transport,
      notifyFrom: settings.notifyFrom,
      defaultLanguage: settings.notifyDefaultLanguage,
      dkim,
      logger,
    }),
});

/**
 * The `seal` strategy: the raw message goes to the seal service, then each recipient of the envelope gets
 * the notification email with its reader link, and the end date when the seal answer has one (`expiresAt`).
 *
 * Retries: sealing is idempotent by envelope id, and the strategy is marked done only after every
 * notification was handed to the mail transport. A retry therefore seals nothing twice; at worst it
 * repeats notifications that went out before a failure (at-least-once, like all delivery here).
 *
 * Only the envelope's recipients (RCPT TO) are notified, not every address the To/Cc headers name: the
 * mail servers of header recipients in other domains receive their own copy and would notify again.
 */
export function createSealOutbound(deps: {
  client: SealClient;
  transport: MailTransport;
  notifyFrom: string;
  /** NOTIFY_DEFAULT_LANGUAGE: for recipients the sender gave no language. */
  defaultLanguage: Language;
  /** Signs each notification (DKIM_*). */
  dkim?: DkimSigner;
  logger: Logger;
}): OutboundStrategy {
  const { client, transport, logger } = deps;
  const notifyAddress = mailboxOf(deps.notifyFrom);
  return {
    async deliver(envelope, openPayload) {
      // Without its Bcc fields (bcc.ts): the reader shows no Bcc, and the sealed record names none of them;
      // without the subject tag its rule strips (subject-tag.ts), so the reader never shows it.
      const payload = streamWithHead(await openPayload(), outgoingHead(envelope.subject_strip));
      const sealed = await client.seal(envelope.id, envelope.recipients, payload);
      const links = new Map(sealed.recipients.map((r) => [comparable(r.email), r]));
      const outcomes = await Promise.allSettled(
        envelope.recipients.map(async (recipient): Promise<FailedRecipient[]> => {
          const entry = links.get(comparable(recipient));
          if (!entry) {
            return [
              {
                recipient,
                status: '5.0.0',
                diagnostic: `${X_DIAGNOSTIC}; the seal service returned no reader link for this recipient`,
              },
            ];
          }
          const chosen = isLanguage(entry.language) ? entry.language : undefined;
          const language = chosen ?? deps.defaultLanguage;
          // A language in the link only when one was chosen for this recipient (sender, contacts directory):
          // otherwise the reader page follows the browser's, as a German reader of an English default expects.
          const link = chosen ? withLanguage(entry.link, chosen) : entry.link;
          const composed = await composeNotification({
            from: deps.notifyFrom,
            to: recipient,
            sender: typeof sealed.sender === 'string' ? sealed.sender : '',
            link,
            method: entry.method === 'sms' ? 'sms' : 'email',
            sealedId: sealed.id,
            language,
            ...(sealed.expiresAt !== undefined ? { expiresAt: new Date(sealed.expiresAt) } : {}),
          });
          const raw = deps.dkim ? await deps.dkim.sign(composed) : composed;
          const report = await transport.send({ envelope: { from: notifyAddress, to: [recipient] }, raw });
          // For the sender's trail, not awaited: a failure to report never holds up or fails the delivery.
          if (report.rejected.length === 0) {
            client
              .reportNotified(sealed.id, recipient)
              .catch((error: unknown) =>
                logger.warn(
                  { envelopeId: envelope.id, sealedId: sealed.id, reason: (error as Error).message },
                  'notified event not reported to the seal service',
                ),
              );
          }
          // The embedded default has no mail server: the link in the log is how a developer reads the message.
          if (transport.kind === 'outbox') {
            logger.info(
              { envelopeId: envelope.id, sealedId: sealed.id, recipient, link },
              `reader link for ${recipient}: ${link} (notification written to the outbox)`,
            );
          }
          return report.rejected;
        }),
      );

      const failed: FailedRecipient[] = [];
      const temporary: DeliveryError[] = [];
      for (const [i, outcome] of outcomes.entries()) {
        if (outcome.status === 'fulfilled') {
          failed.push(...outcome.value);
          continue;
        }
        const error = outcome.reason;
        if (error instanceof DeliveryError && error.permanent) {
          failed.push({
            recipient: envelope.recipients[i]!,
            status: error.status,
            diagnostic: error.diagnostic,
            remoteMta: error.remoteMta,
          });
        } else {
          temporary.push(
            error instanceof DeliveryError ? error : new DeliveryError(false, String(error), { cause: error }),
          );
        }
      }
      if (temporary.length > 0) {
        throw new DeliveryError(
          false,
          `sealed as ${sealed.id}; ${temporary.length} notification(s) not sent: ${temporary[0]!.message}`,
          {
            diagnostic: temporary[0]!.diagnostic,
            remoteMta: temporary[0]!.remoteMta,
            cause: temporary[0],
          },
        );
      }
      if (failed.length === envelope.recipients.length) {
        throw new DeliveryError(true, `sealed as ${sealed.id}; no recipient could be notified`, { recipients: failed });
      }
      const notified = envelope.recipients.length - failed.length;
      return { rejected: failed, detail: `sealed as ${sealed.id}, ${notified} recipient(s) notified` };
    },
  };
}

/** The reader opens in the chosen language: the link says which, unless the seal service did already. */
function withLanguage(link: string, language: Language): string {
  const url = new URL(link);
  if (!url.searchParams.has('lang')) url.searchParams.set('lang', language);
  return url.toString();
}

const comparable = (address: string) => (normalizeEmail(address) ?? address.trim()).toLowerCase();

/** The bare address of NOTIFY_FROM ("Sealpost <no-reply@example.org>"), for MAIL FROM. */
function mailboxOf(from: string): string {
  const [first] = addressparser(from, { flatten: true });
  return first && 'address' in first && first.address ? first.address : from.trim();
}
