import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig, variablesMarkdown } from './config.ts';
import { parseDuration } from './duration.ts';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail('expected a ConfigError');
}

describe('configuration', () => {
  it("uses the spec's defaults when nothing is set", () => {
    const config = loadConfig({});
    assert.equal(config.auth.smsCodeExpiration, parseDuration('15m'));
    assert.equal(config.auth.attachmentsRetentionPeriod, parseDuration('336h'));
    assert.equal(config.auth.expiredAttachmentsWatcherInterval, parseDuration('1h'));
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
  });

  it('reads durations in every Go form', () => {
    const config = loadConfig({ SMS_CODE_EXPIRATION: '1h30m', ATTACHMENTS_RETENTION_PERIOD: '1.5h', EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: '90s' });
    assert.equal(config.auth.smsCodeExpiration, 90n * 60n * 1_000_000_000n);
    assert.equal(config.auth.attachmentsRetentionPeriod, 90n * 60n * 1_000_000_000n);
    assert.equal(config.auth.expiredAttachmentsWatcherInterval, 90n * 1_000_000_000n);
  });

  it('names the variable, the value and what was expected when a value is bad', () => {
    const problems = problemsOf({ SMS_CODE_EXPIRATION: '15', AUTH_PORT: '80000', INBOUND_SMTP_TLS: 'yes' });
    assert.equal(problems.length, 3, 'all problems are reported at once');
    assert.match(problems.join('\n'), /^SMS_CODE_EXPIRATION="15" is not valid: expected a duration string/m);
    assert.match(problems.join('\n'), /AUTH_PORT="80000" is not valid: expected a port number/);
    assert.match(problems.join('\n'), /INBOUND_SMTP_TLS="yes" is not valid: expected a boolean/);
  });

  it('refuses zero and negative durations where a period must pass', () => {
    assert.match(problemsOf({ EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: '0' })[0]!, /EXPIRED_ATTACHMENTS_WATCHER_INTERVAL="0"/);
    assert.match(problemsOf({ SMS_CODE_EXPIRATION: '-5m' })[0]!, /SMS_CODE_EXPIRATION="-5m"/);
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

  it('requires both TLS files when inbound SMTP TLS is on', () => {
    const problems = problemsOf({ INBOUND_SMTP_TLS: 'true', INBOUND_SMTP_TLS_PUBLIC_KEY: '/etc/cert.pem' });
    assert.deepEqual(problems, ['INBOUND_SMTP_TLS_PRIVATE_KEY is not set: INBOUND_SMTP_TLS=true needs the private key file']);
    const config = loadConfig({ INBOUND_SMTP_TLS: 'true', INBOUND_SMTP_TLS_PUBLIC_KEY: '/c.pem', INBOUND_SMTP_TLS_PRIVATE_KEY: '/k.pem' });
    assert.deepEqual(config.exchange.inboundSmtpTls, { certPath: '/c.pem', keyPath: '/k.pem' });
  });

  it('takes the IPFS cluster fallback from IPFS_CLUSTER_* with the spec defaults', () => {
    const config = loadConfig({ IPFS_CLUSTER_HOST: 'cluster.example', IPFS_CLUSTER_USER: 'u', IPFS_CLUSTER_PASS: 'p' });
    assert.deepEqual(config.seal.envCluster, { host: 'cluster.example', port: '9094', user: 'u', pass: 'p', secure: true });
    assert.match(problemsOf({ IPFS_CLUSTER_HOST: 'c', IPFS_CLUSTER_USER: 'u' })[0]!, /must be set together/);
  });

  it('generates tokens outside production and says so; production requires them', () => {
    const dev = loadConfig({});
    assert.deepEqual(dev.generatedTokens, ['ADMIN_TOKEN', 'SERVICE_TOKEN']);
    assert.ok(dev.adminToken.length >= 32 && dev.adminToken !== dev.serviceToken);
    assert.deepEqual(loadConfig({ ADMIN_TOKEN: 'a', SERVICE_TOKEN: 's' }).generatedTokens, []);
    assert.deepEqual(problemsOf({ NODE_ENV: 'production' }), [
      'ADMIN_TOKEN is not set: production needs explicit tokens',
      'SERVICE_TOKEN is not set: production needs explicit tokens',
    ]);
  });

  it('documents every variable in one table', () => {
    const table = variablesMarkdown();
    for (const name of ['SMS_CODE_EXPIRATION', 'IPFS_CLUSTER_SECURE', 'INBOUND_SMTP_TLS_PRIVATE_KEY', 'DATABASE_URL', 'S3_BUCKET']) {
      assert.match(table, new RegExp(`\\| \`${name}\` \\|`));
    }
    assert.match(table, /\| `SMS_CODE_EXPIRATION` \| A \| lifetime of an SMS verification code \| `15m` \|/);
  });
});

describe('README', () => {
  it('carries the current variable table (regenerate with `npm run docs`)', async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    assert.ok(readme.includes(`<!-- config:begin -->\n${variablesMarkdown()}\n<!-- config:end -->`), 'README.md is stale: run npm run docs');
  });
});
