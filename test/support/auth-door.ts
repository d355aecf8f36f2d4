import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { htpasswdLine } from '../../src/exchange/inbound/submission-policy.ts';
import { RuleStore } from '../../src/exchange/rules/store.ts';
import { exchangeService } from '../../src/exchange/service.ts';
import { exchangeDb } from './exchange-delivery.ts';
import { startServiceForTest, type ServiceUnderTest } from './services.ts';
import { createTestCertificate, type TestCertificate } from './tls.ts';

export interface AuthDoor {
  exchange: ServiceUnderTest;
  /** The SMTP port. */
  port: number;
  /** The door's certificate, for the clients' STARTTLS. */
  cert: TestCertificate;
  stop(): Promise<void>;
}

/**
 * An exchange whose SMTP door offers AUTH after STARTTLS (a test certificate) to one account of the given
 * bcrypt cost, lets 127.0.0.1 submit without it, and takes SMTP mail by a rule (its delivery off): the door
 * the AUTH and per-client limit tests knock on.
 */
export async function startAuthDoor(options: {
  account: { user: string; pass: string; cost?: number };
  env?: Record<string, string>;
}): Promise<AuthDoor> {
  const dir = await mkdtemp(join(tmpdir(), 'sealpost-auth-door-'));
  const cert = await createTestCertificate();
  const { user, pass, cost } = options.account;
  await writeFile(join(dir, 'users'), `${htpasswdLine(user, pass, cost)}\n`);
  const exchange = await startServiceForTest(exchangeService, {
    env: {
      LOG_LEVEL: 'error',
      DELIVERY_ENABLED: 'false',
      SEAL_URL: 'http://127.0.0.1:9',
      INBOUND_SMTP_TLS: 'true',
      INBOUND_SMTP_TLS_PUBLIC_KEY: cert.certPath,
      INBOUND_SMTP_TLS_PRIVATE_KEY: cert.keyPath,
      INBOUND_SMTP_ALLOWED_NETWORKS: '127.0.0.1/32',
      INBOUND_SMTP_USERS_FILE: join(dir, 'users'),
      ...options.env,
    },
  });
  await new RuleStore(exchangeDb(exchange)).create({
    name: 'keep smtp mail',
    priority: 1,
    configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
  });
  return {
    exchange,
    port: Number(new URL(exchange.service.listening.smtp!).port),
    cert,
    async stop() {
      await exchange.stop();
      await cert.remove();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
