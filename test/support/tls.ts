import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface TestCertificate {
  /** Folder holding cert.pem and key.pem. */
  dir: string;
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
  remove(): Promise<void>;
}

/**
 * A self-signed certificate for `localhost` and 127.0.0.1, made by openssl in a temp folder, so TLS
 * clients can verify the server for real (pass `cert` as their CA) rather than turning checks off.
 * EC P-256 keys: generated in milliseconds, unlike RSA.
 */
export async function createTestCertificate(commonName = 'localhost'): Promise<TestCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'sealpost-tls-'));
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyPath,
    '-out',
    certPath,
    '-days',
    '2',
    '-subj',
    `/CN=${commonName}`,
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  return {
    dir,
    certPath,
    keyPath,
    cert: await readFile(certPath, 'utf8'),
    key: await readFile(keyPath, 'utf8'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
