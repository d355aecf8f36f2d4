import type { SMTPServerDataStream } from 'smtp-server';
import type { PerPeriod } from '../../kernel/parsers.ts';

/**
 * INBOUND_SMTP_MIN_DATA_RATE: calls `onSlow` once if a period of DATA (the first one being the grace) brings
 * fewer than `rate.amount` bytes; a client dripping a byte now and then would otherwise hold its connection,
 * and everything the message set up, for as long as it likes (smtp-server's idle timeout restarts at
 * every byte). Postfix's smtpd_min_data_rate, measured per period rather than per read.
 *
 * One timer per message reading smtp-server's own byte count (`byteLength`): nothing runs per chunk, so
 * the fast path pays nothing. A period in which the intake held the client back (the stream waited for
 * `drain`: the object store is slow) is not the client's fault and is not judged.
 */
export function watchDataRate(stream: SMTPServerDataStream, rate: PerPeriod, onSlow: (received: number) => void) {
  let mark = 0;
  let heldBack = false;
  const onDrain = () => {
    heldBack = true;
  };
  const timer = setInterval(() => {
    const total = stream.byteLength;
    const received = total - mark;
    mark = total;
    if (heldBack || stream.writableNeedDrain) {
      heldBack = false;
      return;
    }
    if (received < rate.amount) {
      stop();
      onSlow(received);
    }
  }, rate.periodMs);
  // The socket keeps the process alive while the client is there; this timer alone should not.
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    stream.off('drain', onDrain);
    stream.off('finish', stop);
    stream.off('close', stop);
  };
  stream.on('drain', onDrain);
  // 'finish': the final dot came (the parser ended the stream); 'close': the client or we cut it short.
  stream.once('finish', stop);
  stream.once('close', stop);
}
