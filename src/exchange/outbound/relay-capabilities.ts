import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { RelayCapabilities } from './types.ts';

/**
 * What the relay offers in its EHLO answer, asked once on a connection of its own. nodemailer
 * neither says what the server offered nor refuses to send 8-bit data to a server without 8BITMIME,
 * so the answer is read from its transaction log (its documented `logger` option): the relay's lines
 * are logged with `tnx: 'server'`. The plaintext EHLO is enough: STARTTLS does not change these two.
 * `name` is what our EHLO says (SMTP_HOSTNAME), as on the connections that send mail.
 */
export async function probeRelay(url: string, timeoutMs: number, name: string): Promise<RelayCapabilities> {
  const parsed = new URL(url);
  const lines: string[] = [];
  const capture = (...args: unknown[]) => {
    if (JSON.stringify(args).includes('"tnx":"server"'))
      lines.push(args.map((arg) => (typeof arg === 'string' ? arg : '')).join(' '));
  };
  const quiet = () => {};
  const connection = new SMTPConnection({
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(parsed.port) || (parsed.protocol === 'smtps:' ? 465 : 25),
    secure: parsed.protocol === 'smtps:',
    ignoreTLS: true,
    name,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    debug: true,
    logger: {
      level: quiet,
      trace: quiet,
      debug: capture,
      info: quiet,
      warn: quiet,
      error: quiet,
      fatal: quiet,
    } as unknown as SMTPConnection.Options['logger'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      connection.once('error', reject);
      connection.connect(() => resolve());
    });
  } finally {
    connection.quit();
    connection.close();
  }
  const ehlo = lines.join('\n');
  return { eightBitMime: /(^|\s)250[ -]8BITMIME\b/im.test(ehlo), smtpUtf8: /(^|\s)250[ -]SMTPUTF8\b/im.test(ehlo) };
}
