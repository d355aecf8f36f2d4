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
      // The text leads the message so that a terminal shows it on its own line, not buried in fields.
      logger.info({ smsTo: to, smsText: text }, `SMS to ${to} (not sent, SMS_PROVIDER=log): ${text}`);
    },
  };
}
