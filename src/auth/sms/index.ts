import type { Config } from '../../kernel/config.ts';
import { durationToMs } from '../../kernel/duration.ts';
import type { Logger } from '../../kernel/logger.ts';
import { httpSmsProvider } from './http.ts';
import { logSmsProvider } from './log.ts';
import type { SmsProvider } from './provider.ts';
import { TWILIO_API, twilioSmsProvider } from './twilio.ts';

export { SmsProviderError, type SmsProvider } from './provider.ts';

/** The provider SMS_PROVIDER names, with its variables checked; a missing one stops the service at start. */
export function createSmsProvider(config: Config, logger: Logger): SmsProvider {
  const sms = config.auth.sms;
  const timeoutMs = durationToMs(sms.timeout);
  switch (sms.provider) {
    case undefined:
      throw new Error('SMS_PROVIDER is not set: production needs a provider that really sends (http or twilio)');
    case 'log':
      if (config.production) {
        throw new Error('SMS_PROVIDER=log writes codes to the log instead of sending them; it is refused with NODE_ENV=production');
      }
      return logSmsProvider(logger);
    case 'http':
      if (!sms.url) throw new Error('SMS_PROVIDER=http needs SMS_PROVIDER_URL (where the JSON {to, from, text} is POSTed)');
      return httpSmsProvider({ url: sms.url, user: sms.user, password: sms.password, from: sms.sender, timeoutMs });
    case 'twilio':
      if (!sms.user || !sms.password) {
        throw new Error('SMS_PROVIDER=twilio needs SMS_PROVIDER_USER (account SID) and SMS_PROVIDER_PASSWORD (auth token)');
      }
      return twilioSmsProvider({ baseUrl: sms.url ?? TWILIO_API, accountSid: sms.user, authToken: sms.password, from: sms.sender, timeoutMs });
  }
}
