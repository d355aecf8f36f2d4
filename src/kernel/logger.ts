import { pino, type Logger, type DestinationStream } from 'pino';
import { PinoPretty } from 'pino-pretty';

export type { Logger };

/**
 * Paths pino blanks out wherever they appear in a log line. Secrets must never reach the logs
 * (tokens, cookies, passwords, one-time codes, session ids), so the list is broad on purpose.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.pass',
  '*.code',
  '*.token',
  '*.sessionId',
  '*.secret',
  '*.secretAccessKey',
  'password',
  'pass',
  'code',
  'token',
  'sessionId',
];

export type LogFormat = 'auto' | 'json' | 'pretty';

/** `auto` is for people first: a terminal gets human lines, a pipe or a file (a log collector) gets JSON. */
export function resolveLogFormat(format: LogFormat, output: { isTTY?: boolean } = process.stdout): 'json' | 'pretty' {
  if (format !== 'auto') return format;
  return output.isTTY ? 'pretty' : 'json';
}

export function createLogger(
  options: { level: string; name?: string; format?: LogFormat },
  destination?: DestinationStream,
): Logger {
  const format = resolveLogFormat(options.format ?? 'json');
  return pino(
    {
      level: options.level,
      name: options.name,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    destination ?? (format === 'pretty' ? prettyStream() : undefined),
  );
}

/**
 * One line per event, in the process (pino-pretty as a stream, no worker thread): time, level, the
 * message, then the remaining fields as compact JSON. The request id and pid are dropped from the line:
 * a person at a terminal reads what happened, the JSON format keeps everything for machines.
 */
function prettyStream(): DestinationStream {
  return PinoPretty({
    colorize: Boolean(process.stdout.isTTY),
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,name,reqId',
    sync: true,
  });
}
