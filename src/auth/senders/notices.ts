import type { FastifyBaseLogger } from 'fastify';
import type { Language } from '../../kernel/languages.ts';
import type { SenderNoticeEvent } from '../config.ts';
import type { CodeMailer } from '../mail/code-mail.ts';
import { CODE_MAIL_TEXTS } from '../mail/texts/index.ts';
import { maskEmail } from '../masking.ts';
import type { SealClient } from '../seal/client.ts';

/**
 * NOTIFY_SENDER_ON (docs/specification.md#auth-endpoints-for-senders): one mail to a sealed message's sender at
 * a recipient's first opening or at a reply, naming the recipient and the subject and linking to the sender's
 * page. Through the code mails' transport and DKIM signer, in NOTIFY_DEFAULT_LANGUAGE: the sender chose none.
 */
export class SenderNotices {
  constructor(
    private readonly options: {
      mailer: CodeMailer;
      seal: Pick<SealClient, 'sealed'>;
      /** `{AUTH_PUBLIC_URL}/sent` */
      pageUrl: string;
      language: Language;
    },
  ) {}

  async send(what: SenderNoticeEvent, messageId: string, recipient: string, log: FastifyBaseLogger): Promise<void> {
    const record = await this.options.seal.sealed(messageId);
    if (!record) return;
    const texts = CODE_MAIL_TEXTS[this.options.language].senderNotice;
    // A subject is the sender's own text, but one line of it: a header must not be split by it.
    const subject = record.subject.replace(/[\r\n]+/g, ' ');
    const { pageUrl } = this.options;
    const mail =
      what === 'opened'
        ? { subject: texts.openedSubject(subject), text: texts.opened(recipient, subject, pageUrl) }
        : { subject: texts.repliedSubject(subject), text: texts.replied(recipient, subject, pageUrl) };
    await this.options.mailer.send({ to: record.sender, ...mail });
    log.info({ messageId, notice: what, to: maskEmail(record.sender) }, 'sender told by mail');
  }
}
