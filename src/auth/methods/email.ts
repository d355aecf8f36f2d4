import { AppError } from '../../kernel/errors.ts';
import type { Language } from '../../kernel/languages.ts';
import type { CodeMailer } from '../mail/code-mail.ts';
import { CODE_MAIL_TEXTS } from '../mail/texts/index.ts';
import { maskEmail } from '../masking.ts';
import type { AuthMetrics } from '../metrics.ts';
import type { SignInMethod } from './method.ts';

/**
 * Sign-in by a code sent by email, for recipients the sender gave no mobile number. The code goes to
 * the address on record, whatever spelling the reader typed.
 */
export function emailMethod(options: {
  mailer: CodeMailer;
  expiresInMinutes: number;
  logCodes: boolean;
  metrics: AuthMetrics;
  /** NOTIFY_DEFAULT_LANGUAGE: for recipients whose sender chose no language. */
  defaultLanguage: Language;
}): SignInMethod {
  return {
    name: 'email',
    destination: (recipient) => recipient.email,
    limitKey: (email) => `email:${email.toLowerCase()}`,
    async send(email, code, log, language = options.defaultLanguage) {
      const texts = CODE_MAIL_TEXTS[language];
      const text = texts.body(code, options.expiresInMinutes);
      try {
        await options.mailer.send({ to: email, subject: texts.subject, text });
      } catch (error) {
        options.metrics.codesFailed.inc({ method: 'email', provider: options.mailer.kind });
        log.error(
          { mailer: options.mailer.kind, to: maskEmail(email), reason: (error as Error).message },
          'code email could not be sent',
        );
        throw new AppError('upstream_failed', 502, 'The email could not be sent; try again in a moment');
      }
      options.metrics.codesSent.inc({ method: 'email', provider: options.mailer.kind });
      // With the development SMS provider (log), email codes are printed too, so that `npm start` needs no inbox.
      if (options.logCodes)
        log.info(
          { mailer: options.mailer.kind, emailTo: email, emailText: text },
          `code email to ${email} (SMS_PROVIDER=log shows it here): ${text}`,
        );
      else log.info({ mailer: options.mailer.kind, to: maskEmail(email) }, 'code sent by email');
    },
    wrongCode: () =>
      new AppError(
        'invalid_code_or_email',
        401,
        'The code is not correct for this email address, or there is no code to check',
      ),
  };
}
