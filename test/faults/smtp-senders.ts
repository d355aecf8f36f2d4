import { SmtpTalk } from '../support/smtp-talk.ts';

/** What one message's sender saw. */
export type Outcome =
  /** `250 ... queued as <id>`: the server promised to deliver it. */
  | 'queued'
  /** A final 4xx/5xx reply to the DATA: the sender keeps the message and tries later (4xx). */
  | 'refused'
  /** The transaction had begun when the connection died: no final reply ever came. */
  | 'unanswered'
  /** Never started (the senders stopped first). */
  | 'unsent';

export interface SentMessage {
  messageId: string;
  raw: Buffer;
  outcome: Outcome;
  /** The final reply (queued, refused) or the error that cut the transaction short (unanswered). */
  reply?: string;
  envelopeId?: string;
}

export interface SenderOptions {
  port: number;
  connections: number;
  /** The messages to send, each at most once, in order across the connections. */
  messages: Array<{ messageId: string; raw: Buffer }>;
  from?: string;
  /** One RCPT TO, or several in one transaction (a message the exchange may split per recipient). */
  to?: string | string[];
  /** Checked before each message; true ends that connection's loop (the rest stay `unsent`). */
  stop?: () => boolean;
  /** Called after each final reply, e.g. to start a fault once enough messages are queued. */
  onReply?: (message: SentMessage) => void;
  /** Pause after a refusal, as a real MTA backs off instead of hammering a server that said 451. */
  backoffMs?: number;
}

/**
 * Several SMTP clients over bare connections (SmtpTalk, not a library that would retry or requeue on
 * its own), each sending one transaction after another on its connection, so the test knows for every
 * message exactly what the server answered — or that it answered nothing. A connection that dies
 * ends its sender: the message in transfer is `unanswered`, and the sender does not reconnect.
 */
export async function sendOverSmtp(options: SenderOptions): Promise<SentMessage[]> {
  const sent: SentMessage[] = options.messages.map((m) => ({ ...m, outcome: 'unsent' }));
  const from = options.from ?? 'alice@sender.example';
  const to = [options.to ?? 'bob@rcpt.example'].flat();
  let next = 0;

  const sender = async () => {
    let talk: SmtpTalk;
    try {
      ({ talk } = await SmtpTalk.open(options.port));
    } catch {
      return; // The server is gone already: nothing was started on this connection.
    }
    try {
      if (!(await talk.send('EHLO faults.test')).startsWith('250')) return;
      while (next < sent.length && !options.stop?.()) {
        const message = sent[next++]!;
        message.outcome = 'unanswered';
        try {
          const replies = [await talk.send(`MAIL FROM:<${from}>`)];
          for (const recipient of to) replies.push(await talk.send(`RCPT TO:<${recipient}>`));
          replies.push(await talk.send('DATA'));
          if (!replies.at(-1)!.startsWith('354')) {
            message.outcome = 'refused';
            // The refusal is the first reply that is not 2xx/3xx (MAIL FROM when the database is down:
            // the rule lookup runs there); the 503s after it only follow from it.
            message.reply = replies.find((reply) => !/^[23]/.test(reply)) ?? replies.join(' | ');
            await talk.send('RSET');
          } else {
            // The messages have no line starting with a dot, so no dot-stuffing is needed.
            talk.write(Buffer.concat([message.raw, Buffer.from('.\r\n')]));
            const reply = await talk.reply();
            message.reply = reply;
            const queued = /^250 .*queued as ([0-9a-f-]{36})$/.exec(reply);
            message.outcome = queued ? 'queued' : 'refused';
            message.envelopeId = queued?.[1];
          }
        } catch (error) {
          message.reply = error instanceof Error ? error.message : String(error);
          return; // The connection died: this message stays `unanswered`.
        }
        options.onReply?.(message);
        if (message.outcome === 'refused' && options.backoffMs)
          await new Promise((resolve) => setTimeout(resolve, options.backoffMs));
      }
      await talk.send('QUIT').catch(() => undefined);
    } catch {
      // EHLO or QUIT on a connection that died: nothing in transfer.
    } finally {
      talk.close();
    }
  };
  await Promise.all(Array.from({ length: options.connections }, sender));
  return sent;
}

/**
 * A small message (~1 KB) with a unique Message-ID, CRLF line ends and no line starting with a dot;
 * the body repeats the id so a payload mixed up with another one would not pass a byte comparison.
 */
export function numberedMessage(tag: string, index: number): { messageId: string; raw: Buffer } {
  const messageId = `<${tag}-${index}@sender.example>`;
  const line = `${tag} message ${index} `.padEnd(76, '-');
  const raw = Buffer.from(
    [
      'From: Alice <alice@sender.example>',
      'To: Bob <bob@rcpt.example>',
      `Subject: ${tag} ${index}`,
      `Message-ID: ${messageId}`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      ...Array.from({ length: 12 }, () => line),
      '',
    ].join('\r\n'),
  );
  return { messageId, raw };
}

/** Counts per outcome, for assertion messages and the log. */
export function tally(sent: SentMessage[]): Record<Outcome, number> {
  const counts: Record<Outcome, number> = { queued: 0, refused: 0, unanswered: 0, unsent: 0 };
  for (const message of sent) counts[message.outcome]++;
  return counts;
}

/** How often each Message-ID arrived at the sink. */
export function arrivals(received: Array<{ messageId: string | undefined }>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { messageId } of received) if (messageId) counts.set(messageId, (counts.get(messageId) ?? 0) + 1);
  return counts;
}

/** The `Received` header's `id` is the envelope id (received-header.ts). */
const RECEIVED_ID = /\(Sealpost\) with E?SMTPS? id ([0-9a-f-]{36})/;

/** The envelope id a relayed message carries in Sealpost's `Received` header. */
export const envelopeIdOf = (message: { raw: Buffer }): string | undefined =>
  RECEIVED_ID.exec(message.raw.toString('latin1'))?.[1];
