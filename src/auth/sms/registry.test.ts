import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../cli/config.ts';
import { ConfigError } from '../../kernel/config.ts';
import { createLogger } from '../../kernel/logger.ts';
import { choices } from '../../kernel/parsers.ts';
import { createSmsProvider, SMS_PROVIDER_REGISTRY, SMS_PROVIDERS } from './index.ts';

describe('SMS providers: one list', () => {
  const logger = createLogger({ level: 'silent' });
  const everything = {
    SMS_PROVIDER_URL: 'https://sms.example.com/send',
    SMS_PROVIDER_USER: 'AC0123',
    SMS_PROVIDER_PASSWORD: 'token',
  };

  it('has a provider in the registry for each listed name, and nothing else', () => {
    assert.deepEqual(Object.keys(SMS_PROVIDER_REGISTRY).sort(), [...SMS_PROVIDERS].sort());
    for (const name of SMS_PROVIDERS) {
      const config = loadConfig({ ...everything, SMS_PROVIDER: name });
      assert.equal(config.auth.sms.provider, name, 'SMS_PROVIDER takes each listed name');
      assert.equal(createSmsProvider(config.auth.sms, false, logger).kind, name);
    }
  });

  it('SMS_PROVIDER refuses a name not in the list, and says the listed ones', () => {
    assert.throws(
      () => loadConfig({ SMS_PROVIDER: 'nexmo' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.includes(`SMS_PROVIDER="nexmo" is not valid: expected ${choices(SMS_PROVIDERS)}`) &&
        choices(SMS_PROVIDERS) === 'http, twilio or log',
    );
  });
});
