import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ConfigError } from '../../kernel/config.ts';
import type { ExchangeConfig } from '../config.ts';

export interface InboundTls {
  cert: Buffer;
  key: Buffer;
  /** The leaf certificate, for the start-up log line (subject, expiry). */
  certificate: X509Certificate;
}

/**
 * Reads and checks the PEM files of INBOUND_SMTP_TLS_PUBLIC_KEY / INBOUND_SMTP_TLS_PRIVATE_KEY once, at
 * start. A file that cannot be read, does not parse, or a key that does not belong to the certificate
 * stops start-up with a ConfigError naming the variable and the file: finding out at the first
 * STARTTLS, from a failing sender, would be far worse.
 */
export function loadInboundTls(tls: ExchangeConfig['inboundSmtpTls']): InboundTls | undefined {
  if (!tls) return undefined;
  const cert = readPem('INBOUND_SMTP_TLS_PUBLIC_KEY', tls.certPath, 'certificate');
  const key = readPem('INBOUND_SMTP_TLS_PRIVATE_KEY', tls.keyPath, 'private key');

  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch (error) {
    throw problem(`INBOUND_SMTP_TLS_PUBLIC_KEY=${tls.certPath} does not hold a PEM certificate (${reason(error)})`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    throw problem(
      `INBOUND_SMTP_TLS_PRIVATE_KEY=${tls.keyPath} does not hold an unencrypted PEM private key (${reason(error)})`,
    );
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw problem(
      `INBOUND_SMTP_TLS_PRIVATE_KEY=${tls.keyPath} does not belong to ` +
        `the certificate in INBOUND_SMTP_TLS_PUBLIC_KEY=${tls.certPath}`,
    );
  }
  // The same check TLS itself will make, so anything else it dislikes (a chain it cannot use) shows now too.
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw problem(
      `INBOUND_SMTP_TLS_PUBLIC_KEY=${tls.certPath} and ` +
        `INBOUND_SMTP_TLS_PRIVATE_KEY=${tls.keyPath} cannot be used for TLS (${reason(error)})`,
    );
  }
  return { cert, key, certificate };
}

function readPem(variable: string, path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw problem(`${variable}=${path}: cannot read the ${what} file (${reason(error)})`);
  }
}

function problem(message: string): ConfigError {
  return new ConfigError([message]);
}

function reason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
