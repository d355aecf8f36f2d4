import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';

export interface CodeMail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Where email codes go: the relay at OUTBOUND_SMTP_URL, or, when it is unset (the embedded default),
 * `.eml` files in `$SEALPOST_DATA_DIR/outbox` — the same choice the exchange makes for its mail, kept
 * here because services do not share code. Failures throw; the caller answers 502.
 */
export interface CodeMailer {
  readonly kind: 'relay' | 'outbox';
  send(mail: CodeMail): Promise<void>;
  close(): Promise<void>;
}

export function createCodeMailer(options: { outboundSmtpUrl: string | undefined; outboxDir: string; from: string; timeoutMs: number }): CodeMailer {
  return options.outboundSmtpUrl ? relayMailer(options.outboundSmtpUrl, options.from, options.timeoutMs) : outboxMailer(options.outboxDir, options.from);
}

function relayMailer(url: string, from: string, timeoutMs: number): CodeMailer {
  const transporter = nodemailer.createTransport({
    url,
    pool: true,
    maxConnections: 2,
    // A reader waits for the answer: bound every phase of the SMTP dialogue.
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  return {
    kind: 'relay',
    async send(mail) {
      await transporter.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    async close() {
      transporter.close();
    },
  };
}

/** Each mail becomes one `.eml` file, written under a temporary name and renamed, so readers never see half a file. */
function outboxMailer(dir: string, from: string): CodeMailer {
  const builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  return {
    kind: 'outbox',
    async send(mail) {
      const info = await builder.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
      const tempDir = join(dir, '.tmp');
      await mkdir(tempDir, { recursive: true });
      const temp = join(tempDir, randomUUID());
      try {
        const file = await open(temp, 'wx', 0o600);
        try {
          await file.write(info.message as Buffer);
          await file.sync();
        } finally {
          await file.close();
        }
        await rename(temp, join(dir, `${new Date().toISOString().replace(/:/g, '-')}-${randomUUID()}.eml`));
      } catch (error) {
        await unlink(temp).catch(() => {});
        throw error;
      }
    },
    async close() {},
  };
}
