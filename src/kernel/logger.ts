import { pino, type Logger, type DestinationStream } from 'pino';

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

export function createLogger(options: { level: string; name?: string }, destination?: DestinationStream): Logger {
  return pino(
    {
      level: options.level,
      name: options.name,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    destination,
  );
}
