import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { loadConfig, variableRows, variablesMarkdown, configurationDoc } from './config.ts';
import { ConfigError, type LoadOptions } from '../kernel/config.ts';
import { durationToMs, parseDuration } from '../kernel/duration.ts';

/** Durations are read once, into milliseconds. */
const ms = (duration: string) => durationToMs(parseDuration(duration));

function problemsOf(env: Record<string, string>, options?: LoadOptions): string[] {
  try {
    loadConfig(env, options);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail('expected a ConfigError');
}

describe('configuration', () => {
  it("uses the spec's defaults when nothing is set", () => {
    const config = loadConfig({});
    assert.equal(config.auth.smsCodeExpiration, ms('15m'));
    assert.equal(config.auth.attachmentsRetentionPeriod, ms('336h'));
    assert.equal(config.auth.expiredAttachmentsWatcherInterval, ms('1h'));
    assert.deepEqual(
      [config.auth.port, config.seal.port, config.exchange.port, config.exchange.smtpPort, config.host],
      [8081, 8082, 8083, 2525, '127.0.0.1'],
    );
    assert.equal(config.dataDir, './data');
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.s3.bucket, undefined);
    assert.equal(config.exchange.inboundSmtpTls, undefined, 'inbound SMTP TLS is disabled by default');
    assert.equal(config.seal.envCluster, undefined);
    assert.equal(config.auth.publicUrl, 'http://127.0.0.1:8081');
    assert.equal(config.env, 'development');
    assert.equal(config.production, false);
    const { delivery, statusArchive } = config.exchange;
    assert.equal(delivery.maxRetries, 10);
    assert.equal(delivery.retryBase, ms('1m'));
    assert.equal(delivery.retryMax, ms('1h'));
    assert.equal(statusArchive.after, ms('720h'));
    assert.equal(statusArchive.retention, ms('87600h'));
    assert.equal(config.auth.attachments.maxSize, 17 * 1024 * 1024, 'no single file larger than a whole reply may be');
    assert.equal(config.auth.attachments.replyMaxTotalSize, 17 * 1024 * 1024);
    const forbidden = config.auth.attachments.forbiddenTypes;
    for (const type of [
      'exe',
      'dll',
      'msi',
      'bat',
      'ps1',
      'jar',
      'sh',
      'apk',
      'application/x-msdownload',
      'application/x-sh',
    ]) {
      assert.ok(forbidden.includes(type), `${type} is forbidden by default`);
    }
    for (const type of ['pdf', 'png', 'docx', 'application/pdf'])
      assert.ok(!forbidden.includes(type), `${type} is allowed by default`);
  });

  it('reads an ATTACHMENT_FORBIDDEN_TYPES override as lower-case entries without dots or duplicates', () => {
    const config = loadConfig({ ATTACHMENT_FORBIDDEN_TYPES: ' .EXE, iso ,application/X-ISO9660-Image,exe' });
    assert.deepEqual(config.auth.attachments.forbiddenTypes, ['exe', 'iso', 'application/x-iso9660-image']);
    assert.deepEqual(
      loadConfig({ ATTACHMENT_FORBIDDEN_TYPES: '' }).auth.attachments.forbiddenTypes,
      [],
      'empty allows all',
    );
    assert.match(
      problemsOf({ ATTACHMENT_FORBIDDEN_TYPES: 'exe,not a type' })[0]!,
      /^ATTACHMENT_FORBIDDEN_TYPES="exe,not a type" is not valid/,
    );
  });

  it('takes NODE_ENV only as development, production or test', () => {
    assert.equal(loadConfig({ NODE_ENV: 'test' }).env, 'test');
    const production = loadConfig({
      NODE_ENV: 'production',
      ADMIN_TOKEN: 'an-admin-token-32-characters-long',
      SERVICE_TOKEN: 'a-service-token-32-characters-long',
    });
    assert.deepEqual([production.env, production.production], ['production', true]);
    // A capital letter must not quietly give development's generated tokens and log SMS provider.
    assert.deepEqual(
      problemsOf({
        NODE_ENV: 'Production',
        ADMIN_TOKEN: 'an-admin-token-32-characters-long',
        SERVICE_TOKEN: 'a-service-token-32-characters-long',
      }),
      ['NODE_ENV="Production" is not valid: expected development, production or test'],
    );
    assert.match(problemsOf({ NODE_ENV: 'prod' })[0]!, /^NODE_ENV="prod" is not valid/);
  });

  it('checks that each URL variable has the scheme its meaning calls for', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgresql://u@db.internal:5432/sealpost',
      S3_ENDPOINT: 'https://s3.example.com/',
      OUTBOUND_SMTP_URL: 'smtps://u:p@relay.example.com:465',
      SEAL_URL: 'https://seal.internal',
      EXCHANGE_URL: 'http://exchange.internal:8083',
      AUTH_PUBLIC_URL: 'https://mail.example.com/',
      SMS_PROVIDER_URL: 'https://sms.example.com/send',
    });
    assert.equal(config.databaseUrl, 'postgresql://u@db.internal:5432/sealpost');
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://u@db/x' }).databaseUrl, 'postgres://u@db/x');
    assert.equal(config.s3.endpoint, 'https://s3.example.com', 'a trailing slash is dropped');
    assert.equal(config.exchange.outboundSmtpUrl, 'smtps://u:p@relay.example.com:465');
    assert.equal(loadConfig({ OUTBOUND_SMTP_URL: 'smtp://relay:25' }).exchange.outboundSmtpUrl, 'smtp://relay:25');
    assert.deepEqual(
      [config.exchange.sealUrl, config.auth.exchangeUrl, config.auth.publicUrl],
      ['https://seal.internal', 'http://exchange.internal:8083', 'https://mail.example.com'],
    );
    assert.equal(config.auth.sms.url, 'https://sms.example.com/send');

    const problems = problemsOf({
      DATABASE_URL: 'mysql://u@db/x',
      S3_ENDPOINT: 'ftp://s3.example.com',
      OUTBOUND_SMTP_URL: 'http://relay.example.com',
      SEAL_URL: 'smtp://seal.internal',
      EXCHANGE_URL: 'file:///tmp/exchange',
      AUTH_PUBLIC_URL: 'javascript:alert(1)',
      SMS_PROVIDER_URL: 'mailto:sms@example.com',
    });
    assert.deepEqual(
      [...problems].sort(),
      [
        'DATABASE_URL=(value hidden) is not valid: expected a postgres:// or postgresql:// URL',
        'S3_ENDPOINT="ftp://s3.example.com" is not valid: expected an http:// or https:// URL',
        'OUTBOUND_SMTP_URL=(value hidden) is not valid: expected an smtp:// or smtps:// URL',
        'AUTH_PUBLIC_URL="javascript:alert(1)" is not valid: expected an http:// or https:// URL',
        'SMS_PROVIDER_URL="mailto:sms@example.com" is not valid: expected an http:// or https:// URL',
        'SEAL_URL="smtp://seal.internal" is not valid: expected an http:// or https:// URL',
        'EXCHANGE_URL="file:///tmp/exchange" is not valid: expected an http:// or https:// URL',
      ].sort(),
    );
  });

  describe('AUTH_PUBLIC_URL in production', () => {
    const production = {
      NODE_ENV: 'production',
      ADMIN_TOKEN: 'an-admin-token-32-characters-long',
      SERVICE_TOKEN: 'a-service-token-32-characters-long',
      OUTBOUND_OUTBOX: 'true',
    };
    const forAuth = { services: ['auth'] as const };

    it('is required when auth starts, so reader links and cookies never fall back to http://HOST:PORT', () => {
      assert.deepEqual(problemsOf(production, forAuth), [
        'AUTH_PUBLIC_URL is not set: production needs the public https:// address of the auth service ' +
          '(reader links from seal, Secure session cookies in auth)',
      ]);
      assert.match(
        problemsOf({ ...production, AUTH_PUBLIC_URL: '' }, { services: ['seal', 'exchange', 'auth'] })[0]!,
        /^AUTH_PUBLIC_URL is not set/,
      );
      assert.equal(
        loadConfig({ ...production, AUTH_PUBLIC_URL: 'https://mail.example.com' }, forAuth).auth.publicUrl,
        'https://mail.example.com',
      );
    });

    it('refuses plain http: except on a loopback host', () => {
      assert.deepEqual(problemsOf({ ...production, AUTH_PUBLIC_URL: 'http://mail.example.com' }, forAuth), [
        'AUTH_PUBLIC_URL="http://mail.example.com" is not valid in production: expected an https:// URL ' +
          '(over http: session cookies lose Secure; http: is accepted only for localhost)',
      ]);
      assert.equal(problemsOf({ ...production, AUTH_PUBLIC_URL: 'http://10.0.0.5:8081' }, forAuth).length, 1);
      assert.equal(problemsOf({ ...production, AUTH_PUBLIC_URL: 'http://localhost.example.com' }, forAuth).length, 1);
      for (const local of [
        'http://localhost:8081',
        'http://LOCALHOST',
        'http://app.localhost',
        'http://127.0.0.1:8081',
        'http://[::1]:8081',
      ]) {
        assert.equal(loadConfig({ ...production, AUTH_PUBLIC_URL: local }, forAuth).auth.publicUrl, local, local);
      }
    });

    it('is required when the seal service starts: it writes the reader links', () => {
      assert.match(problemsOf(production, { services: ['seal'] })[0]!, /^AUTH_PUBLIC_URL is not set/);
      assert.equal(
        problemsOf({ ...production, AUTH_PUBLIC_URL: 'http://mail.example.com' }, { services: ['seal'] }).length,
        1,
      );
    });

    it('is not asked of processes that start neither auth nor seal, nor outside production', () => {
      assert.equal(loadConfig(production, { services: ['exchange'] }).auth.publicUrl, 'http://127.0.0.1:8081');
      assert.equal(
        loadConfig({ AUTH_PUBLIC_URL: 'http://mail.example.com' }, forAuth).auth.publicUrl,
        'http://mail.example.com',
      );
      assert.equal(loadConfig({ NODE_ENV: 'test' }, forAuth).auth.publicUrl, 'http://127.0.0.1:8081');
    });
  });

  it('reads durations in every Go form', () => {
    const config = loadConfig({
      SMS_CODE_EXPIRATION: '1h30m',
      ATTACHMENTS_RETENTION_PERIOD: '1.5h',
      EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: '90s',
    });
    assert.equal(config.auth.smsCodeExpiration, 90 * 60 * 1_000);
    assert.equal(config.auth.attachmentsRetentionPeriod, 90 * 60 * 1_000);
    assert.equal(config.auth.expiredAttachmentsWatcherInterval, 90 * 1_000);
  });

  it('names the variable, the value and what was expected when a value is bad', () => {
    const problems = problemsOf({ SMS_CODE_EXPIRATION: '15', AUTH_PORT: '80000', INBOUND_SMTP_TLS: 'yes' });
    assert.equal(problems.length, 3, 'all problems are reported at once');
    assert.match(problems.join('\n'), /^SMS_CODE_EXPIRATION="15" is not valid: expected a duration string/m);
    assert.match(problems.join('\n'), /AUTH_PORT="80000" is not valid: expected a port number/);
    assert.match(problems.join('\n'), /INBOUND_SMTP_TLS="yes" is not valid: expected a boolean/);
  });

  it('refuses zero and negative durations where a period must pass', () => {
    assert.match(
      problemsOf({ EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: '0' })[0]!,
      /EXPIRED_ATTACHMENTS_WATCHER_INTERVAL="0"/,
    );
    assert.match(problemsOf({ SMS_CODE_EXPIRATION: '-5m' })[0]!, /SMS_CODE_EXPIRATION="-5m"/);
  });

  it('reads the SMTP per-client rates as AMOUNT/PERIOD, 0 as no limit, and names a bad one', () => {
    const defaults = loadConfig({}).exchange;
    assert.deepEqual(defaults.inboundSmtpClientRate, { amount: 600, periodMs: 60_000 });
    assert.deepEqual(defaults.inboundSmtpMinDataRate, { amount: 8192, periodMs: 30_000 });
    assert.equal(defaults.inboundSmtpClientConnections, 50);
    const set = loadConfig({ INBOUND_SMTP_CLIENT_RATE: '100/10s', INBOUND_SMTP_MIN_DATA_RATE: '0' }).exchange;
    assert.deepEqual(set.inboundSmtpClientRate, { amount: 100, periodMs: 10_000 });
    assert.equal(set.inboundSmtpMinDataRate, undefined);
    const problems = problemsOf({
      INBOUND_SMTP_CLIENT_RATE: '100',
      INBOUND_SMTP_MIN_DATA_RATE: '1KiB/0s',
    });
    assert.ok(problems.some((p) => p.startsWith('INBOUND_SMTP_CLIENT_RATE="100" is not valid: expected COUNT/PERIOD')));
    assert.ok(problems.some((p) => p.startsWith('INBOUND_SMTP_MIN_DATA_RATE="1KiB/0s" is not valid: expected SIZE')));
  });

  it("accepts Go's boolean spellings", () => {
    assert.equal(loadConfig({ IPFS_CLUSTER_HOST: 'c1', IPFS_CLUSTER_SECURE: 'F' }).seal.envCluster?.secure, false);
    assert.equal(loadConfig({ IPFS_CLUSTER_HOST: 'c1', IPFS_CLUSTER_SECURE: '1' }).seal.envCluster?.secure, true);
    assert.equal(loadConfig({ IPFS_CLUSTER_HOST: 'c1' }).seal.envCluster?.secure, true, 'HTTPS is the default');
  });

  it('never echoes a secret value in an error', () => {
    const problems = problemsOf({ SEAL_MASTER_KEY: 'hunter2-not-a-key' });
    assert.match(problems[0]!, /SEAL_MASTER_KEY=\(value hidden\) is not valid: expected 32 bytes/);
    assert.doesNotMatch(problems.join('\n'), /hunter2/);
  });

  it('reads master key versions and refuses what does not fit together, naming the variables', () => {
    const config = loadConfig({
      SEAL_MASTER_KEY: 'aa'.repeat(32),
      SEAL_MASTER_KEYS: ` 2:${'bb'.repeat(32)}, 3:${Buffer.alloc(32, 3).toString('base64')}`,
      SEAL_MASTER_KEY_VERSION: '2',
    });
    assert.deepEqual([...config.seal.masterKeys!.keys()], [2, 3]);
    assert.deepEqual(config.seal.masterKeys!.get(3), Buffer.alloc(32, 3));
    assert.equal(config.seal.masterKeyVersion, 2);
    assert.equal(config.seal.keyPkcs11, undefined);

    const problems = problemsOf({
      SEAL_MASTER_KEYS: `2:${'bb'.repeat(32)},2:${'cc'.repeat(32)}`,
      SEAL_KEY_PKCS11_KEYS: '4:sealpost-4',
    });
    assert.ok(problems.some((p) => p.startsWith('SEAL_MASTER_KEYS=(value hidden) is not valid: expected comma-')));
    assert.doesNotMatch(problems.join('\n'), /bbbb|cccc/);
    assert.ok(
      problems.includes(
        'SEAL_KEY_PKCS11_MODULE is not set: SEAL_KEY_PKCS11_SLOT, _PIN_FILE and _KEYS need the library',
      ),
    );
    assert.deepEqual(problemsOf({ SEAL_MASTER_KEY: 'aa'.repeat(32), SEAL_MASTER_KEYS: `1:${'bb'.repeat(32)}` }), [
      'SEAL_MASTER_KEYS gives version 1, which SEAL_MASTER_KEY is: give version 1 in one of them only',
    ]);
    assert.deepEqual(problemsOf({ SEAL_KEY_PKCS11_MODULE: '/usr/lib/softhsm/libsofthsm2.so' }), [
      'SEAL_KEY_PKCS11_SLOT is not set: SEAL_KEY_PKCS11_MODULE needs it',
      'SEAL_KEY_PKCS11_PIN_FILE is not set: SEAL_KEY_PKCS11_MODULE needs it',
      'SEAL_KEY_PKCS11_KEYS is not set: SEAL_KEY_PKCS11_MODULE needs it',
    ]);
    const hsm = loadConfig({
      SEAL_MASTER_KEYS: `2:${'bb'.repeat(32)}`,
      SEAL_KEY_PKCS11_MODULE: '/usr/lib/softhsm/libsofthsm2.so',
      SEAL_KEY_PKCS11_SLOT: 'sealpost',
      SEAL_KEY_PKCS11_PIN_FILE: '/etc/sealpost/hsm.pin',
      SEAL_KEY_PKCS11_KEYS: '3:sealpost-3,4:sealpost 4',
    });
    assert.deepEqual(
      [...hsm.seal.keyPkcs11!.keys],
      [
        [3, 'sealpost-3'],
        [4, 'sealpost 4'],
      ],
    );
    assert.deepEqual(
      problemsOf({
        SEAL_MASTER_KEYS: `2:${'bb'.repeat(32)}`,
        SEAL_KEY_PKCS11_MODULE: '/m.so',
        SEAL_KEY_PKCS11_SLOT: '0',
        SEAL_KEY_PKCS11_PIN_FILE: '/p',
        SEAL_KEY_PKCS11_KEYS: '2:sealpost-2',
      }),
      ['SEAL_KEY_PKCS11_KEYS gives version 2, which SEAL_MASTER_KEY(S) gives too: one key a version'],
    );
  });

  it('requires both TLS files when inbound SMTP TLS is on', () => {
    const problems = problemsOf({ INBOUND_SMTP_TLS: 'true', INBOUND_SMTP_TLS_PUBLIC_KEY: '/etc/cert.pem' });
    assert.deepEqual(problems, [
      'INBOUND_SMTP_TLS_PRIVATE_KEY is not set: INBOUND_SMTP_TLS=true needs the private key file',
    ]);
    const config = loadConfig({
      INBOUND_SMTP_TLS: 'true',
      INBOUND_SMTP_TLS_PUBLIC_KEY: '/c.pem',
      INBOUND_SMTP_TLS_PRIVATE_KEY: '/k.pem',
    });
    assert.deepEqual(config.exchange.inboundSmtpTls, { certPath: '/c.pem', keyPath: '/k.pem' });
  });

  it("sends undeliverable bounces to NOTIFY_FROM's postmaster unless BOUNCE_NOTICE_RECIPIENT says otherwise", () => {
    assert.equal(loadConfig({}).exchange.bounceNoticeRecipient, 'postmaster@localhost');
    const notify = { NOTIFY_FROM: 'Sealpost <no-reply@mail.example.org>' };
    assert.equal(loadConfig(notify).exchange.bounceNoticeRecipient, 'postmaster@mail.example.org');
    const set = { ...notify, BOUNCE_NOTICE_RECIPIENT: ' mail-admin@example.org ' };
    assert.equal(loadConfig(set).exchange.bounceNoticeRecipient, 'mail-admin@example.org');
    assert.match(
      problemsOf({ BOUNCE_NOTICE_RECIPIENT: 'Admin <a@example.org>' }).join('\n'),
      /BOUNCE_NOTICE_RECIPIENT/,
    );
  });

  it('takes the IPFS cluster fallback from IPFS_CLUSTER_* with the spec defaults', () => {
    const config = loadConfig({ IPFS_CLUSTER_HOST: 'cluster.example', IPFS_CLUSTER_USER: 'u', IPFS_CLUSTER_PASS: 'p' });
    assert.deepEqual(config.seal.envCluster, {
      host: 'cluster.example',
      port: '9094',
      user: 'u',
      pass: 'p',
      secure: true,
    });
    assert.match(problemsOf({ IPFS_CLUSTER_HOST: 'c', IPFS_CLUSTER_USER: 'u' })[0]!, /must be set together/);
  });

  it('generates tokens outside production and says so; production requires them', () => {
    const dev = loadConfig({});
    assert.deepEqual(dev.generatedTokens, ['ADMIN_TOKEN', 'SERVICE_TOKEN']);
    assert.ok(dev.adminToken.length >= 32 && dev.adminToken !== dev.serviceToken);
    assert.deepEqual(
      loadConfig({
        ADMIN_TOKEN: 'an-admin-token-32-characters-long',
        SERVICE_TOKEN: 'a-service-token-32-characters-long',
      }).generatedTokens,
      [],
    );
    assert.deepEqual(problemsOf({ NODE_ENV: 'production' }), [
      'ADMIN_TOKEN is not set: production needs explicit tokens (generate each with `openssl rand -base64 32`)',
      'SERVICE_TOKEN is not set: production needs explicit tokens (generate each with `openssl rand -base64 32`)',
    ]);
  });

  it('documents every variable in one table', () => {
    const table = variablesMarkdown();
    for (const name of [
      'SMS_CODE_EXPIRATION',
      'IPFS_CLUSTER_SECURE',
      'INBOUND_SMTP_TLS_PRIVATE_KEY',
      'DATABASE_URL',
      'S3_BUCKET',
    ]) {
      assert.match(table, new RegExp(`\\| \`${name}\` \\|`));
    }
    assert.match(table, /\| `SMS_CODE_EXPIRATION` \| A \| lifetime of an SMS verification code \| `15m` \|/);
  });
});

describe('who declares which variable', () => {
  it('lists each variable once, declared by one object, with every service that reads it', () => {
    const rows = variableRows();
    const names = rows.map((row) => row.spec.name);
    assert.deepEqual(names, [...new Set(names)], 'two declarations of one name would show twice');
    const readers = (name: string) => rows.find((row) => row.spec.name === name)?.readers;
    assert.equal(readers('NODE_ENV'), 'all');
    assert.deepEqual(readers('SEAL_URL'), ['auth', 'exchange']);
    assert.deepEqual(readers('AUTH_PUBLIC_URL'), ['auth', 'seal']);
    assert.deepEqual(readers('SEAL_MAX_MESSAGE_SIZE'), ['auth', 'seal']);
    assert.deepEqual(readers('DKIM_DOMAIN'), ['auth', 'exchange']);
    assert.deepEqual(readers('DELIVERY_LEASE'), ['exchange']);
  });
});

describe('docs/configuration.md', () => {
  it('is what `npm run docs` writes from the variables', async () => {
    const { readFile } = await import('node:fs/promises');
    const doc = await readFile(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    assert.ok(doc.includes(variablesMarkdown()), 'the table holds every variable as config.ts describes it');
    assert.equal(doc, configurationDoc(), 'docs/configuration.md is stale: run npm run docs');
  });
});

describe('production secrets', () => {
  const all: LoadOptions = { services: ['seal', 'exchange', 'auth'] };
  /** A production environment every check passes: each refusal below changes one variable of it. */
  const good: Record<string, string> = {
    NODE_ENV: 'production',
    ADMIN_TOKEN: randomBytes(32).toString('base64'),
    SERVICE_TOKEN: randomBytes(32).toString('base64'),
    AUTH_SECRET: randomBytes(32).toString('hex'),
    SEAL_MASTER_KEY: randomBytes(32).toString('hex'),
    S3_SECRET_ACCESS_KEY: randomBytes(32).toString('base64'),
    AUTH_PUBLIC_URL: 'https://read.example.org',
    OUTBOUND_SMTP_URL: 'smtp://relay.example.org:587',
    SMS_PROVIDER: 'http',
    SMS_PROVIDER_URL: 'https://sms.example.org/send',
  };
  const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

  it('takes strong secrets', () => {
    assert.equal(loadConfig(good, all).production, true);
  });

  it('refuses every placeholder of .env.example that reaches a Sealpost process, naming its variable', async () => {
    const example = await readFile(root('.env.example'), 'utf8');
    const compose = await readFile(root('compose.yaml'), 'utf8');
    const placeholders = [...example.matchAll(/^([A-Z_]+)=(.+)$/gm)]
      .map(([, name, value]) => [name!, value!.trim()] as const)
      .filter(([, value]) => /CHANGE-ME/.test(value) || /^0+$/.test(value));
    assert.ok(placeholders.length >= 6, 'the placeholders of .env.example were found');
    const read = new Set(variableRows().map((row) => row.spec.name));
    const tested: string[] = [];
    for (const [name, value] of placeholders) {
      // The Sealpost variables compose.yaml hands this .env value to (S3_SECRET_ACCESS_KEY for
      // MINIO_ROOT_PASSWORD); the other containers' (CLUSTER_SECRET, GRAFANA_ADMIN_PASSWORD) are not Sealpost's.
      const targets = [...compose.matchAll(new RegExp(`^\\s+([A-Z_0-9]+): "?\\$\\{${name}\\b`, 'gm'))]
        .map(([, target]) => target!)
        .filter((target) => read.has(target));
      for (const target of targets) {
        const problems = problemsOf({ ...good, [target]: value }, all);
        assert.ok(
          problems.some((problem) => problem.startsWith(`${target} `) && /openssl rand/.test(problem)),
          `${name}=${value} as ${target}: ${problems.join(' | ')}`,
        );
        assert.ok(!problems.join('\n').includes(value), 'the value is not shown');
        tested.push(target);
      }
    }
    for (const name of ['ADMIN_TOKEN', 'SERVICE_TOKEN', 'SEAL_MASTER_KEY', 'AUTH_SECRET', 'S3_SECRET_ACCESS_KEY'])
      assert.ok(tested.includes(name), `${name}'s placeholder was tried`);
  });

  it('refuses tokens under 32 characters, keys of one byte repeated, and one value in two secrets', () => {
    assert.deepEqual(problemsOf({ ...good, ADMIN_TOKEN: 'a' }, all), [
      'ADMIN_TOKEN is 1 characters long, refused in production (at least 32): ' +
        'generate one with `openssl rand -base64 32`',
    ]);
    assert.match(
      problemsOf({ ...good, SERVICE_TOKEN: 'x'.repeat(40) }, all)[0]!,
      /^SERVICE_TOKEN is one character repeated/,
    );
    assert.match(
      problemsOf({ ...good, SEAL_MASTER_KEY: 'ff'.repeat(32) }, all)[0]!,
      /^SEAL_MASTER_KEY is one byte repeated .*`openssl rand -hex 32`/,
    );
    assert.match(
      problemsOf({ ...good, SEAL_MASTER_KEY: 'abcd' }, all)[0]!,
      /^SEAL_MASTER_KEY=\(value hidden\) is not valid/,
    );
    // Every key version is held to the same rules, and a version repeating another's key rotates nothing.
    assert.match(
      problemsOf({ ...good, SEAL_MASTER_KEYS: `2:${'00'.repeat(32)}` }, all)[0]!,
      /^SEAL_MASTER_KEYS version 2 is one byte repeated/,
    );
    assert.deepEqual(problemsOf({ ...good, SEAL_MASTER_KEYS: `2:${good.SEAL_MASTER_KEY}` }, all), [
      'SEAL_MASTER_KEYS version 2 is the same key as SEAL_MASTER_KEY: each version needs its own key',
    ]);
    assert.equal(
      loadConfig({ ...good, SEAL_MASTER_KEYS: `2:${randomBytes(32).toString('hex')}` }, all).production,
      true,
    );
    assert.deepEqual(problemsOf({ ...good, SERVICE_TOKEN: good.ADMIN_TOKEN! }, all), [
      'SERVICE_TOKEN has the same value as ADMIN_TOKEN, refused in production: each secret needs its own; ' +
        'generate one with `openssl rand -base64 32`',
    ]);
    // Outside production the same values start (a developer's machine).
    assert.equal(loadConfig({ ...good, NODE_ENV: 'development', ADMIN_TOKEN: 'a' }, all).adminToken, 'a');
  });

  it('refuses production without a relay unless the outbox is named on purpose (OUTBOUND_OUTBOX)', () => {
    const { OUTBOUND_SMTP_URL: _relay, ...noRelay } = good;
    for (const service of ['exchange', 'auth'] as const) {
      const problems = problemsOf(noRelay, { services: [service] });
      assert.deepEqual(problems.length, 1, problems.join(' | '));
      assert.match(problems[0]!, /^OUTBOUND_SMTP_URL is not set: .*set OUTBOUND_OUTBOX=true/);
    }
    assert.equal(loadConfig({ ...noRelay, OUTBOUND_OUTBOX: 'true' }, all).exchange.outbox, true);
    // seal sends no mail, and outside production the outbox is the default.
    assert.equal(loadConfig(noRelay, { services: ['seal'] }).exchange.outboundSmtpUrl, undefined);
    assert.equal(loadConfig({ ...noRelay, NODE_ENV: 'development' }, all).exchange.outbox, false);
  });
});
