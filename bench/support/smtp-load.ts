import { randomBytes } from 'node:crypto';
import { createTransport } from 'nodemailer';
import { inFlight } from './workers.ts';

export interface LoadResult {
  messages: number;
  seconds: number;
  perSecond: number;
  p50ms: number;
  p99ms: number;
  failed: number;
}

/** A 10 KB-ish RFC 5322 message with a unique Message-ID. */
export function sampleMessage(index: number, size = 10 * 1024): Buffer {
  const head =
    `From: bench@sender.example\r\nTo: rcpt@recipient.example\r\nSubject: bench ${index}\r\n` +
    `Message-ID: <bench-${index}-${randomBytes(6).toString('hex')}@sender.example>\r\nMIME-Version: 1.0\r\n` +
    `Content-Type: text/plain; charset=us-ascii\r\n\r\n`;
  const line = 'The quick brown fox jumps over the lazy dog, again and again and again.\r\n';
  return Buffer.from(head + line.repeat(Math.ceil((size - head.length) / line.length)));
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The middle of a few figures in any order (the mean of the middle two for an even count), unlike percentile(). */
export function median(figures: number[]): number {
  if (figures.length === 0) return NaN;
  const sorted = figures.toSorted((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Sends `messages` messages over `connections` reused SMTP connections (nodemailer's pool), each
 * connection sending one message after the other; latency is MAIL FROM .. final reply of one message.
 * The connections are opened (one message each, not counted) before the clock starts.
 */
export async function runSmtpLoad(port: number, connections: number, messages: number): Promise<LoadResult> {
  const transport = createTransport({
    host: '127.0.0.1',
    port,
    pool: true,
    maxConnections: connections,
    maxMessages: Infinity,
    secure: false,
    ignoreTLS: true,
  });
  const bodies = Array.from({ length: messages }, (_, i) => sampleMessage(i));
  // Open every connection before the clock starts: smtp-server greets only after 100 ms.
  await Promise.all(
    Array.from({ length: connections }, (_, i) =>
      transport
        .sendMail({
          envelope: { from: 'bench@sender.example', to: ['rcpt@recipient.example'] },
          raw: sampleMessage(-1 - i),
        })
        .catch(() => undefined),
    ),
  );
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  await inFlight(messages, connections, async (i) => {
    const t0 = performance.now();
    try {
      await transport.sendMail({
        envelope: { from: 'bench@sender.example', to: ['rcpt@recipient.example'] },
        raw: bodies[i]!,
      });
      latencies.push(performance.now() - t0);
    } catch {
      failed++;
    }
  });
  const seconds = (performance.now() - started) / 1000;
  transport.close();
  latencies.sort((a, b) => a - b);
  return {
    messages,
    seconds,
    perSecond: (messages - failed) / seconds,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    failed,
  };
}
