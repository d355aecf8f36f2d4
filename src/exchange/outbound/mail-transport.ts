import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type MailMessage from 'nodemailer/lib/mailer/mail-message';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import SMTPPool from 'nodemailer/lib/smtp-pool';
import { installDotStuffing } from './dot-stuffing.ts';
import { probeRelay } from './relay-capabilities.ts';
import { DeliveryError, type MailTransport, type OutgoingMail, type RelayCapabilities } from './types.ts';

export function createMailTransport(options: {
  outboundSmtpUrl: string | undefined;
  outboxDir: string;
  /** Relay connections kept open at most: one per delivery worker is enough. */
  maxConnections: number;
  /**
   * SMTP_HOSTNAME: the name our EHLO gives the relay. nodemailer's default is the machine's name, or
   * `[127.0.0.1]` when that does not resolve (a container's), which relays that check HELO refuse.
   */
  hostname: string;
}): MailTransport {
  return options.outboundSmtpUrl
    ? createRelayTransport(options.outboundSmtpUrl, options.maxConnections, options.hostname)
    : createOutboxTransport(options.outboxDir);
}

function createRelayTransport(url: string, maxConnections: number, hostname: string): MailTransport {
  const parsed = new URL(url);
  // RFC 3464 §2.3.5: a relay named by an address is written as an address literal (RFC 5321 §4.1.3).
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const remoteMta = `dns; ${isIP(host) === 4 ? `[${host}]` : isIP(host) === 6 ? `[IPv6:${host}]` : host}`;
  const pool = new SMTPPool({
    url,
    pool: true,
    maxConnections,
    name: hostname,
    // A requeue after a dropped connection would resend a payload stream that was already partly read;
    // the delivery queue retries with a fresh stream instead.
    maxRequeues: 0,
  });
  // What the relay offers does not change while it runs: asked once, again after a failed probe.
  let offers: Promise<RelayCapabilities> | undefined;
  return {
    kind: 'relay',
    description: `${parsed.protocol}//${parsed.host}`,
    async send(mail) {
      try {
        const info = await new Promise<SMTPPool.SentMessageInfo>((resolve, reject) =>
          pool.send(poolMessage(mail), (error, sent) => (error ? reject(error) : resolve(sent!))),
        );
        const rejected = (info.rejectedErrors ?? []).map((error) => ({
          recipient: error.recipient ?? '',
          ...smtpStatus(error.response, error.responseCode),
          remoteMta,
        }));
        return { accepted: info.accepted.map(String), rejected, response: info.response };
      } catch (error) {
        throw relayError(error, remoteMta);
      } finally {
        if (mail.raw instanceof Readable) mail.raw.destroy();
      }
    },
    async capabilities() {
      offers ??= probeRelay(url, 30_000, hostname).catch((error: unknown) => {
        offers = undefined;
        throw new DeliveryError(
          false,
          `relay: cannot read its EHLO: ${error instanceof Error ? error.message : String(error)}`,
          { remoteMta, cause: error },
        );
      });
      return offers;
    },
    async close() {
      pool.close();
    },
  };
}

/**
 * A message as nodemailer's pool takes it from its Mailer (a MailMessage: the data it was given and the
 * compiled message), holding only what the pool and its connections read. The Mailer is left out: for a
 * raw message it only costs CPU (it builds a MIME tree around the bytes, draws a boundary and a
 * Message-ID it does not use and pipes the bytes through two more streams; 9 % of the engine's CPU in
 * the profile), and it rebuilds the envelope with addressparser, merging recipients that differ only in
 * case. The relay must get the envelope as received (RFC 5321 §2.4: local parts are case-sensitive;
 * quoted local parts such as "quoted local"@example.org), and gets it here untouched.
 */
function poolMessage(mail: OutgoingMail): MailMessage<SMTPPool.SentMessageInfo> {
  const envelope = {
    from: mail.envelope.from || false,
    to: [...mail.envelope.to],
    use8BitMime: mail.use8BitMime,
    smtputf8: mail.smtputf8,
  };
  const message = {
    getEnvelope: () => envelope,
    // For the pool's debug log only, which is off.
    messageId: () => '',
    getHeader: () => '',
    // SMTPConnection.send takes a Buffer or a stream and dot-stuffs either on its way to the socket.
    createReadStream: () => mail.raw,
  };
  return { data: {}, message } as unknown as MailMessage<SMTPPool.SentMessageInfo>;
}

installDotStuffing();

/**
 * nodemailer says SMTPUTF8 on MAIL FROM only when an address is non-ASCII; a message whose
 * addresses are ASCII but whose headers are UTF-8 needs it too (RFC 6531 §3.4), and nodemailer has no
 * option for that. This wraps its MAIL FROM step (10.x, smtp-connection _setEnvelope) to add the
 * keyword when our envelope asks for it and the server offers it; the tests read the MAIL FROM the
 * relay received, so an upgrade that moves this internal breaks a test, not the mail.
 */
const connectionPrototype = SMTPConnection.prototype as unknown as {
  _setEnvelope(envelope: { smtputf8?: boolean }, callback: unknown): unknown;
  _sendCommand(command: string): unknown;
  _supportedExtensions: string[];
  _usingSmtpUtf8: boolean;
};
const setEnvelope = connectionPrototype._setEnvelope;
connectionPrototype._setEnvelope = function (this: typeof connectionPrototype, envelope, callback) {
  if (!envelope?.smtputf8 || !this._supportedExtensions.includes('SMTPUTF8'))
    return setEnvelope.call(this, envelope, callback);
  // _setEnvelope writes MAIL FROM before it returns: the wrapper lives for this one call only.
  const sendCommand = this._sendCommand;
  this._sendCommand = function (this: typeof connectionPrototype, command: string) {
    if (/^MAIL FROM:/i.test(command) && !/\sSMTPUTF8\b/i.test(command)) {
      command += ' SMTPUTF8';
      this._usingSmtpUtf8 = true;
    }
    return sendCommand.call(this, command);
  };
  try {
    return setEnvelope.call(this, envelope, callback);
  } finally {
    delete (this as Partial<typeof connectionPrototype>)._sendCommand;
  }
};

interface SmtpFailure {
  code?: string;
  response?: string;
  responseCode?: number;
  message?: string;
}

/**
 * RFC 5321: a 5yz reply refuses the message for good, a 4yz reply or a broken connection is worth
 * another try. Failures of our own set-up (credentials, TLS, configuration) stay temporary even when
 * the relay answered 5xx (535 bad credentials): bouncing every message for an operator's typo would
 * lose mail that a fixed configuration delivers.
 */
function relayError(error: unknown, remoteMta: string): DeliveryError {
  const failure = (error ?? {}) as SmtpFailure;
  const code = failure.responseCode;
  const aboutTheMessage = failure.code === 'EENVELOPE' || failure.code === 'EMESSAGE';
  const permanent = aboutTheMessage && code !== undefined && code >= 500 && code < 600 && code !== 503;
  const reply = failure.response ?? failure.message ?? String(error);
  const { status, diagnostic } = smtpStatus(failure.response, code, permanent, failure.message);
  return new DeliveryError(permanent, `relay: ${reply}`, { status, diagnostic, remoteMta, cause: error });
}

/** The RFC 3463 status of an SMTP reply: its enhanced code when it has one, else the reply's class. */
export function smtpStatus(
  response: string | undefined,
  responseCode: number | undefined,
  permanent = (responseCode ?? 0) >= 500,
  fallbackText?: string,
): { status: string; diagnostic: string } {
  const enhanced = response ? /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(response)?.[1] : undefined;
  const status = enhanced && enhanced[0] === (permanent ? '5' : '4') ? enhanced : permanent ? '5.0.0' : '4.0.0';
  const diagnostic = response
    ? `smtp; ${oneLine(response)}`
    : `x-sealpost; ${oneLine(fallbackText ?? 'no reply from the relay')}`;
  return { status, diagnostic };
}

const oneLine = (text: string) =>
  text
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .trim()
    .slice(0, 900);

/**
 * The embedded default: each message becomes one `.eml` file, written under a temporary name, synced
 * and renamed, so a reader of the folder never sees half a file. The SMTP envelope goes in front as
 * `Return-Path` and `X-Sealpost-Envelope-To` header lines (as a local delivery agent adds Return-Path);
 * the message itself follows byte for byte.
 */
function createOutboxTransport(dir: string): MailTransport {
  const tempDir = join(dir, '.tmp');
  let ready: Promise<unknown> | undefined;
  return {
    kind: 'outbox',
    description: dir,
    async send(mail) {
      const temp = join(tempDir, randomUUID());
      try {
        ready ??= mkdir(tempDir, { recursive: true }).catch((error: unknown) => {
          ready = undefined;
          throw error;
        });
        await ready;
        const name = `${new Date().toISOString().replace(/:/g, '-')}-${randomUUID()}.eml`;
        const head = Buffer.from(
          `Return-Path: <${mail.envelope.from}>\r\nX-Sealpost-Envelope-To: ${mail.envelope.to.join(',\r\n ')}\r\n`,
        );
        const file = await open(temp, 'wx');
        try {
          await file.write(head);
          if (Buffer.isBuffer(mail.raw)) await file.write(mail.raw);
          else for await (const chunk of mail.raw) await file.write(chunk as Buffer);
          await file.sync();
        } finally {
          await file.close();
        }
        await rename(temp, join(dir, name));
        await syncFolder(dir);
        return { accepted: [...mail.envelope.to], rejected: [], response: `written to ${join(dir, name)}` };
      } catch (error) {
        await unlink(temp).catch(() => {});
        throw new DeliveryError(false, `outbox: ${error instanceof Error ? error.message : String(error)}`, {
          cause: error,
        });
      } finally {
        if (mail.raw instanceof Readable) mail.raw.destroy();
      }
    },
    async capabilities() {
      return { eightBitMime: true, smtpUtf8: true };
    },
    async close() {},
  };
}

/** The rename is durable only once the folder itself is synced. */
async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
