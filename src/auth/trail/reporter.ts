import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { clientAddress, clientKey } from '../client-ip.ts';
import type { SenderNoticeEvent } from '../config.ts';
import { maskClient } from '../masking.ts';
import type { SealClient, TrailReport } from '../seal/client.ts';
import type { SenderNotices } from '../senders/notices.ts';

/**
 * What the auth service saw of a sealed message, reported to the seal service's trail
 * (docs/specification.md#trail) off the request's path: never awaited by the request, and a failure is a
 * warning in the log, never the reader's error. The sender is told by mail (NOTIFY_SENDER_ON) of the first
 * opening per recipient, as B answers it, and of each reply.
 */
export class TrailReporter {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly options: {
      seal: Pick<SealClient, 'reportEvent'>;
      notices: SenderNotices;
      notifyOn: readonly SenderNoticeEvent[];
      trustProxyHops: number;
    },
  ) {}

  /** The client of `request`, masked as a trail keeps it. */
  client(request: FastifyRequest): string {
    return maskClient(clientKey(clientAddress(request, this.options.trustProxyHops)));
  }

  report(messageId: string, report: TrailReport, log: FastifyBaseLogger): void {
    const work = this.deliver(messageId, report, log).catch((error: unknown) =>
      log.warn({ messageId, event: report.event, reason: (error as Error).message }, 'trail event not reported'),
    );
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }

  /** Waits for the reports under way (at the service's stop). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private async deliver(messageId: string, report: TrailReport, log: FastifyBaseLogger): Promise<void> {
    const { first } = await this.options.seal.reportEvent(messageId, report);
    const notice: SenderNoticeEvent | undefined =
      report.event === 'opened' && first ? 'opened' : report.event === 'reply_sent' ? 'replied' : undefined;
    if (notice && report.recipient && this.options.notifyOn.includes(notice))
      await this.options.notices
        .send(notice, messageId, report.recipient, log)
        .catch((error: unknown) =>
          log.warn({ messageId, notice, reason: (error as Error).message }, 'sender notice not sent'),
        );
  }
}
