import type { FastifyBaseLogger } from 'fastify';
import type { Language } from '../../kernel/languages.ts';
import type { CodeMailer } from '../mail/code-mail.ts';
import { CODE_MAIL_TEXTS } from '../mail/texts/index.ts';
import { maskEmail, maskMobile } from '../masking.ts';
import type { SmsProvider } from '../sms/index.ts';

/**
 * After a mobile number changed, the recipient hears of it where an intruder cannot intercept it: an SMS to
 * the old number and an email to the address on record, each with the sender's name and the time. The
 * change itself stands whatever happens to these (it was proven with both numbers); a notice that cannot be
 * sent is logged as an error for the operator.
 */
export class MobileChangeNotices {
  constructor(private readonly options: { provider: SmsProvider; mailer: CodeMailer; defaultLanguage: Language }) {}

  async tell(
    change: {
      email: string;
      oldMobile: string;
      newMobile: string;
      sender: string;
      at: Date;
      language: Language | undefined;
    },
    log: FastifyBaseLogger,
  ): Promise<void> {
    const language = change.language ?? this.options.defaultLanguage;
    const texts = CODE_MAIL_TEXTS[language].mobileChanged;
    const format = new Intl.DateTimeFormat(language, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });
    const when = `${format.format(change.at)} UTC`;
    const results = await Promise.allSettled([
      this.options.provider.send({ to: change.oldMobile, text: texts.sms(change.sender, when) }),
      this.options.mailer.send({
        to: change.email,
        subject: texts.subject,
        text: texts.body(change.sender, when, maskMobile(change.newMobile)),
      }),
    ]);
    const [sms, mail] = results;
    if (sms.status === 'rejected')
      log.error(
        { to: maskMobile(change.oldMobile), reason: (sms.reason as Error).message },
        'the old number could not be told of the mobile change',
      );
    if (mail.status === 'rejected')
      log.error(
        { to: maskEmail(change.email), reason: (mail.reason as Error).message },
        'the address could not be told of the mobile change',
      );
    if (sms.status === 'fulfilled' && mail.status === 'fulfilled')
      log.info({ to: maskMobile(change.oldMobile), email: maskEmail(change.email) }, 'mobile change notices sent');
  }

  /**
   * After a recipient who signed in by email added a number for their later messages: the address is told (the
   * number was proven by a code to it; whoever reads the mailbox learns that it now protects the later messages).
   */
  async tellAdded(
    added: { email: string; mobile: string; at: Date; language: Language | undefined },
    log: FastifyBaseLogger,
  ): Promise<void> {
    const language = added.language ?? this.options.defaultLanguage;
    const texts = CODE_MAIL_TEXTS[language].mobileAdded;
    const format = new Intl.DateTimeFormat(language, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });
    try {
      await this.options.mailer.send({
        to: added.email,
        subject: texts.subject,
        text: texts.body(`${format.format(added.at)} UTC`, maskMobile(added.mobile)),
      });
      log.info({ email: maskEmail(added.email) }, 'mobile number added: the address was told');
    } catch (error) {
      log.error(
        { to: maskEmail(added.email), reason: (error as Error).message },
        'the address could not be told of the number added',
      );
    }
  }
}
