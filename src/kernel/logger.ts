import { pino, type Logger, type DestinationStream } from 'pino';
import { PinoPretty } from 'pino-pretty';

export type { Logger };

/** What a secret is replaced with in a log line. */
export const REDACTED = '[redacted]';

/**
 * Secrets must never reach the logs (tokens, cookies, passwords, one-time codes, session ids, keys), so
 * the net is broad on purpose: a field by one of these names is blanked at the top of a line and one level
 * down (`{ user: { password } }`), whatever the line. One exception: an error's `code` is what an operator
 * reads (ECONNREFUSED, a PostgreSQL SQLSTATE, an S3 error code), never a secret, and stays.
 */
const SECRET_FIELDS: ReadonlySet<string> = new Set([
  'password',
  'pass',
  'code',
  'token',
  'sessionId',
  'secret',
  'secretAccessKey',
]);

/**
 * What pino's own redaction blanks: the secret headers of the requests and responses it logs, and
 * SECRET_FIELDS at the top level, which covers a child logger's bindings too (redactSecrets sees only a
 * line's own fields). Each applies only to lines that have its first key: no cost to the others.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  ...SECRET_FIELDS,
];

/**
 * Blanks SECRET_FIELDS one level down in a line's fields (pino's `formatters.log`, run before its serializers;
 * the top level is REDACTED_PATHS'); copies only what it changes. Hand-written rather than `*.password`-style
 * paths for pino's redaction: its library (@pinojs/redact 0.4) applies wildcard paths to every field of every
 * line and parses each path again each time, 12 µs and some 20 KB of garbage per line, 18 % of the exchange's
 * allocations at 8 connections (bench/RESULTS.md, "The log line's redaction"), and it blanked the `code` of
 * every logged error.
 */
export function redactSecrets(fields: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    const redacted = redactNested(value);
    if (redacted === value) continue;
    copy ??= { ...fields };
    copy[key] = redacted;
  }
  return copy ?? fields;
}

/** A field's object with its own SECRET_FIELDS blanked (a copy, prototype and all), or the value itself. */
function redactNested(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value)) return value;
  const isError = value instanceof Error;
  let copy: object | undefined;
  for (const key of Object.keys(value)) {
    if (!SECRET_FIELDS.has(key) || (isError && key === 'code')) continue;
    copy ??= copyOf(value, isError);
    Object.defineProperty(copy, key, { value: REDACTED, enumerable: true, writable: true, configurable: true });
  }
  return copy ?? value;
}

function copyOf(value: object, isError: boolean): object {
  const copy = Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as object;
  // V8 reads an error's stack through its own slot, which a copied accessor does not reach.
  if (isError)
    Object.defineProperty(copy, 'stack', { value: (value as Error).stack, writable: true, configurable: true });
  return copy;
}

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
      redact: { paths: REDACTED_PATHS, censor: REDACTED },
      formatters: { log: redactSecrets },
      base: { pid: process.pid },
    },
    destination ?? (format === 'pretty' ? prettyStream() : undefined),
  );
}

/** Fields a terminal line leaves out: in its head already, or noise for a person (the JSON format keeps them). */
const PRETTY_HIDDEN: ReadonlySet<string> = new Set(['time', 'level', 'msg', 'pid', 'hostname', 'name', 'reqId']);

/**
 * A value as `key=value` writes it: bare when it has no space, quote or `=`, quoted otherwise; a list
 * comma-separated; an object inside a value as `(key=value …)`, so that no JSON is left on the line.
 */
function detailValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=(),]+$/.test(value) ? value : JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  if (Array.isArray(value)) return value.map(detailValue).join(',');
  const pairs = Object.entries(value as Record<string, unknown>)
    .filter(([, inner]) => inner !== undefined)
    .map(([key, inner]) => `${key}=${detailValue(inner)}`);
  return `(${pairs.join(' ')})`;
}

/**
 * The details of a terminal line as `key=value` pairs after the message, one line whatever they hold: an
 * object's fields one level down as `key.field=value`, an error as its message and code (its stack stays in
 * the JSON format), so that a line never ends in a JSON object that wraps over the next rows.
 */
export function prettyDetails(log: Record<string, unknown>): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(log)) {
    if (PRETTY_HIDDEN.has(key) || value === undefined) continue;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const fields = value as Record<string, unknown>;
      if (typeof fields.message === 'string' && ('stack' in fields || key === 'err' || key === 'error')) {
        pairs.push(`${key}=${detailValue(fields.message)}`);
        if (fields.code !== undefined) pairs.push(`${key}.code=${detailValue(fields.code)}`);
        continue;
      }
      for (const [field, inner] of Object.entries(fields)) {
        if (inner !== undefined) pairs.push(`${key}.${field}=${detailValue(inner)}`);
      }
      continue;
    }
    pairs.push(`${key}=${detailValue(value)}`);
  }
  return pairs.join(' ');
}

/**
 * One line per event, in the process (pino-pretty as a stream, no worker thread): time, level, the
 * message, then the remaining fields as `key=value` (prettyDetails). The request id and pid are dropped from
 * the line: a person at a terminal reads what happened, the JSON format keeps everything for machines.
 */
function prettyStream(): DestinationStream {
  return PinoPretty({
    colorize: Boolean(process.stdout.isTTY),
    // The details are part of the message (prettyDetails), so pino-pretty writes no object of its own and
    // ends the line itself (it does not with singleLine).
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,name,reqId',
    hideObject: true,
    messageFormat: (log, messageKey) => {
      const message = String(log[messageKey] ?? '');
      const details = prettyDetails(log);
      return details ? `${message} ${details}` : message;
    },
    sync: true,
  });
}
