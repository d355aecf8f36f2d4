import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../kernel/errors.ts';
import { maskMobile } from '../masking.ts';
import type { AuthMetrics } from '../metrics.ts';
import type { SmsProvider } from '../sms/index.ts';
import type { SignInMethod } from './method.ts';

/** Sign-in by a code sent by SMS to the mobile number the sender gave for the recipient (or its confirmed change). */
export function smsMethod(options: { provider: SmsProvider; text: string; metrics: AuthMetrics }): SignInMethod {
  return {
    name: 'sms',
    destination(recipient, typedMobile) {
      if (!recipient.mobile)
        throw new AppError(
          'forbidden_auth_method',
          403,
          'This recipient has no mobile number on record; sign in by email',
        );
      if (typedMobile !== recipient.mobile) {
        throw new AppError(
          'email_and_mobile_mismatch',
          403,
          'This mobile number is not the one on record for this email address',
        );
      }
      return recipient.mobile;
    },
    limitKey: (mobile) => `sms:${mobile}`,
    async send(mobile, code, log) {
      await sendSms(options, mobile, code, log);
    },
    wrongCode: () =>
      new AppError(
        'incorrect_code',
        401,
        'The code is not correct, or there is no code to check; request a new one if needed',
      ),
  };
}

/** One code SMS: the text with the code filled in goes to the provider and nowhere else (never to a log line). */
export async function sendSms(
  options: { provider: SmsProvider; text: string; metrics: AuthMetrics },
  mobile: string,
  code: string,
  log: FastifyBaseLogger,
): Promise<void> {
  try {
    await options.provider.send({ to: mobile, text: options.text.replaceAll('{code}', code) });
  } catch (error) {
    options.metrics.codesFailed.inc({ method: 'sms', provider: options.provider.kind });
    log.error(
      { provider: options.provider.kind, to: maskMobile(mobile), reason: (error as Error).message },
      'SMS provider failed',
    );
    throw new AppError('upstream_failed', 502, 'The SMS could not be sent; try again in a moment');
  }
  options.metrics.smsSent.inc();
  options.metrics.codesSent.inc({ method: 'sms', provider: options.provider.kind });
  log.info({ provider: options.provider.kind, to: maskMobile(mobile) }, 'code sent by SMS');
}
