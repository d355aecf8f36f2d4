import type { Logger } from '../../kernel/logger.ts';
import type { AuthConfig } from '../config.ts';
import { httpSmsProvider } from './http.ts';
import { logSmsProvider } from './log.ts';
import type { SmsProvider, SmsProviderName } from './provider.ts';
import { TWILIO_API, twilioSmsProvider } from './twilio.ts';

export { SmsProviderError, type SmsProvider, SMS_PROVIDERS, type SmsProviderName } from './provider.ts';

type SmsSettings = AuthConfig['sms'];

/**
 * Every provider of SMS_PROVIDERS by name, with the variables it needs checked; a missing one stops the
 * service at start. A new provider is a file in this folder, a name in the list and a line here.
 */
export const SMS_PROVIDER_REGISTRY: {
  readonly [Name in SmsProviderName]: (sms: SmsSettings, production: boolean, logger: Logger) => SmsProvider;
} = {
  http: (sms) => {
    if (!sms.url)
      throw new Error('SMS_PROVIDER=http needs SMS_PROVIDER_URL (where the JSON {to, from, text} is POSTed)');
    return httpSmsProvider({
      url: sms.url,
      user: sms.user,
      password: sms.password,
      from: sms.sender,
      timeoutMs: sms.timeout,
    });
  },
  twilio: (sms) => {
    if (!sms.user || !sms.password) {
      throw new Error(
        'SMS_PROVIDER=twilio needs SMS_PROVIDER_USER (account SID) and SMS_PROVIDER_PASSWORD (auth token)',
      );
    }
    return twilioSmsProvider({
      baseUrl: sms.url ?? TWILIO_API,
      accountSid: sms.user,
      authToken: sms.password,
      from: sms.sender,
      timeoutMs: sms.timeout,
    });
  },
  log: (_sms, production, logger) => {
    if (production) {
      throw new Error(
        'SMS_PROVIDER=log writes codes to the log instead of sending them; it is refused with NODE_ENV=production',
      );
    }
    return logSmsProvider(logger);
  },
};

/** The provider SMS_PROVIDER names (none in production when unset: the service does not start). */
export function createSmsProvider(sms: SmsSettings, production: boolean, logger: Logger): SmsProvider {
  if (sms.provider === undefined)
    throw new Error('SMS_PROVIDER is not set: production needs a provider that really sends (http or twilio)');
  return SMS_PROVIDER_REGISTRY[sms.provider](sms, production, logger);
}
