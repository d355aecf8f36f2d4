/**
 * The environment of an auth service under benchmark: PostgreSQL, a seal stand-in in place of B, and SMS
 * posted to a local capture server (the `http` provider), so nothing leaves 127.0.0.1.
 */
export function authBenchEnv(options: {
  databaseUrl: string;
  dataDir: string;
  serviceToken: string;
  sealUrl: string;
  smsUrl: string;
}): Record<string, string> {
  return {
    DATABASE_URL: options.databaseUrl,
    SEALPOST_DATA_DIR: options.dataDir,
    AUTH_SECRET: 'bench-auth-secret-0123456789abcdef-0123456789',
    SERVICE_TOKEN: options.serviceToken,
    ADMIN_TOKEN: 'bench-admin',
    // The process helper points SEAL_URL at a seal service that does not run here: the stand-in replaces it.
    SEAL_URL: options.sealUrl,
    SMS_PROVIDER: 'http',
    SMS_PROVIDER_URL: `${options.smsUrl}/sms`,
    SMS_PROVIDER_USER: 'bench',
    SMS_PROVIDER_PASSWORD: 'bench',
    SMS_SENDER: 'Sealpost',
    SMS_LIMIT_NUMBER_INTERVAL: '0s',
  };
}
