import type { Logger } from '../../kernel/logger.ts';
import type { SmsProvider } from './provider.ts';

/**
 * Development only: the SMS is written to the log, code included, instead of being sent. The auth
 * service refuses this provider with NODE_ENV=production (see ./index.ts).
 */
export function logSmsProvider(logger: Logger): SmsProvider {
  return {
    kind: 'log',
    async send({ to, text }) {
      logger.warn({ smsTo: to, smsText: text }, 'SMS not sent (SMS_PROVIDER=log): this is its text');
    },
  };
}
