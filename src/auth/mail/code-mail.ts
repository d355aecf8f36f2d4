import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { DkimSigner } from '../../kernel/dkim.ts';

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

export function createCodeMailer(options: {
  outboundSmtpUrl: string | undefined;
  outboxDir: string;
  from: string;
  timeoutMs: number;
  /** DKIM_*: every code email is signed. */
  dkim?: DkimSigner;
}): CodeMailer {
  const compose = composer(options.from, options.dkim);
  return options.outboundSmtpUrl
    ? relayMailer(options.outboundSmtpUrl, compose, options.timeoutMs)
    : outboxMailer(options.outboxDir, compose);
}

interface Composed {
  envelope: { from: string; to: string[] };
  raw: Buffer;
}

/** The whole message as bytes (so that it can be signed), with the envelope the relay is given. */
function composer(from: string, dkim: DkimSigner | undefined): (mail: CodeMail) => Promise<Composed> {
  const [first] = addressparser(from, { flatten: true });
  const fromAddress = first && 'address' in first && first.address ? first.address : from.trim();
  return async (mail) => {
    const message = await new MailComposer({
      from,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      newline: 'windows',
    })
      .compile()
      .build();
    return { envelope: { from: fromAddress, to: [mail.to] }, raw: dkim ? await dkim.sign(message) : message };
  };
}

function relayMailer(url: string, compose: (mail: CodeMail) => Promise<Composed>, timeoutMs: number): CodeMailer {
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
      await transporter.sendMail(await compose(mail));
    },
    async close() {
      transporter.close();
    },
  };
}

/** Each mail becomes one `.eml` file, written under a temporary name and renamed, so readers never see half a file. */
function outboxMailer(dir: string, compose: (mail: CodeMail) => Promise<Composed>): CodeMailer {
  return {
    kind: 'outbox',
    async send(mail) {
      const { raw } = await compose(mail);
      const tempDir = join(dir, '.tmp');
      await mkdir(tempDir, { recursive: true });
      const temp = join(tempDir, randomUUID());
      try {
        const file = await open(temp, 'wx', 0o600);
        try {
          await file.write(raw);
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
