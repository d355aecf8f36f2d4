import { isIP } from 'node:net';
import { durationToMs, parseDuration } from './duration.ts';

/**
 * The kinds of value a variable holds: how its text is read, and what the operator is told when it
 * cannot be. A variable's declaration spreads one of these (`{ name: 'LOG_LEVEL', ...oneOf(LOG_LEVELS), … }`); a
 * service with a value of its own kind writes a parse function that throws ValueError.
 */
export interface ValueKind<T> {
  parse: (raw: string) => T;
  expected: string;
}

/** Thrown by a parse function: the loader turns it into "NAME=value is not valid: expected …". */
export class ValueError extends Error {}

export const DURATION = 'a duration string such as 15m, 1h30m or 336h';
export const BOOLEAN = 'a boolean (true or false)';
export const HTTP_URL = 'an http:// or https:// URL';
export const BYTE_SIZE = 'a byte size such as 26214400, 512KiB, 25MiB or 1GiB';

export function text(expected: string): ValueKind<string> {
  return { parse: (raw) => raw, expected };
}

export function nonEmpty(expected: string): ValueKind<string> {
  return {
    parse: (raw) => {
      if (raw.trim() === '') throw new ValueError();
      return raw;
    },
    expected,
  };
}

function parseInteger(raw: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(raw.trim())) throw new ValueError();
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new ValueError();
  return value;
}

export function integer(min: number, max: number): ValueKind<number> {
  return { parse: (raw) => parseInteger(raw, min, max), expected: `an integer from ${min} to ${max}` };
}

/** A port to listen on (0: any free one) or, from 1, one to connect to. */
export function port(min: 0 | 1 = 0): ValueKind<number> {
  return { parse: (raw) => parseInteger(raw, min, 65535), expected: `a port number from ${min} to 65535` };
}

/** Go's strconv.ParseBool, because the spec's booleans come from a Go service. */
export function parseBoolean(raw: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  throw new ValueError();
}
export const boolean: ValueKind<boolean> = { parse: parseBoolean, expected: BOOLEAN };

/**
 * A Go duration (`15m`, `1h30m`, `1.5h`), checked in nanoseconds as written and kept as whole
 * milliseconds, the unit of every timer it ends up in: converted here once rather than at each use.
 */
function durationKind(accept: (ns: bigint) => boolean): ValueKind<number> {
  return {
    parse: (raw) => {
      let ns: bigint;
      try {
        ns = parseDuration(raw);
      } catch {
        throw new ValueError();
      }
      if (!accept(ns)) throw new ValueError();
      return durationToMs(ns);
    },
    expected: DURATION,
  };
}
/** A period that must pass: zero and negative durations are refused. */
export const positiveDuration = durationKind((ns) => ns > 0n);
/** A limit that 0s turns off. */
export const nonNegativeDuration = durationKind((ns) => ns >= 0n);

/** A URL whose scheme fits what the variable points at: a relay is not reached over http:, nor a database. */
export function url(schemes: string[], expected: string): ValueKind<string> {
  return {
    parse: (raw) => {
      let parsed: URL;
      try {
        parsed = new URL(raw);
      } catch {
        throw new ValueError();
      }
      if (!schemes.includes(parsed.protocol)) throw new ValueError();
      return raw.replace(/\/+$/, '');
    },
    expected,
  };
}
export const httpUrl = url(['http:', 'https:'], HTTP_URL);

/** One of a list, spelled exactly; the list is the one the type comes from (`as const`). */
export function oneOf<const T extends string>(values: readonly T[]): ValueKind<T> {
  return {
    parse: (raw) => {
      if (!values.includes(raw as T)) throw new ValueError();
      return raw as T;
    },
    expected: choices(values),
  };
}

/** `a, b or c`: how a list of allowed values reads in a message. */
export function choices(values: readonly string[]): string {
  return values.length > 1 ? `${values.slice(0, -1).join(', ')} or ${values.at(-1)}` : (values[0] ?? '');
}

/** Byte sizes: a plain number of bytes, or with a binary suffix (25MiB, 512KiB, 1GiB). */
export const byteSize: ValueKind<number> = {
  parse: (raw) => {
    const match = /^(\d+)\s*(B|KiB|MiB|GiB)?$/.exec(raw.trim());
    if (!match) throw new ValueError();
    const factor = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }[(match[2] ?? 'B') as 'B'];
    const value = Number(match[1]) * factor;
    if (!Number.isSafeInteger(value) || value <= 0) throw new ValueError();
    return value;
  },
  expected: BYTE_SIZE,
};

/** A limit per period, `AMOUNT/PERIOD` (600/1m, 8KiB/30s); undefined when the variable says 0 (no limit). */
export interface PerPeriod {
  amount: number;
  /** The period in milliseconds, as durations are kept. */
  periodMs: number;
}

/**
 * An amount of `kind` (a count, a byte size: written as the variables of that kind are) per duration, or 0
 * for no limit. One value rather than two variables: the amount means nothing without its period.
 */
export function perPeriod(kind: ValueKind<number>, expected: string): ValueKind<PerPeriod | undefined> {
  return {
    parse: (raw) => {
      if (raw.trim() === '0') return undefined;
      const slash = raw.indexOf('/');
      if (slash < 0) throw new ValueError();
      const amount = kind.parse(raw.slice(0, slash).trim());
      if (amount <= 0) throw new ValueError();
      return { amount, periodMs: positiveDuration.parse(raw.slice(slash + 1).trim()) };
    },
    expected,
  };
}

/**
 * One mailbox, `Name <address>` or a bare address, whose address is plausible; kept as written. The
 * check is here so that a typo stops start-up instead of every message.
 */
export function parseMailbox(raw: string): string {
  const match = /^\s*(?:"?([^"<>]*)"?\s*<([^<>\s]+)>|([^<>\s]+))\s*$/.exec(raw);
  const address = match?.[2] ?? match?.[3];
  if (!address || !/^[^@\s]+@[^@\s]+\.[^@\s]+$|^[^@\s]+@localhost$/.test(address)) throw new ValueError();
  return raw.trim();
}

/** A domain name, lower-cased, without a trailing dot. */
export function parseDomainName(raw: string): string {
  const domain = raw.trim().toLowerCase().replace(/\.$/, '');
  if (!/^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/.test(domain))
    throw new ValueError();
  return domain;
}

/** Domain names, comma-separated, lower-cased, without trailing dots or duplicates. */
export function parseDomainList(raw: string): string[] {
  const entries = raw
    .split(',')
    .map((entry) => entry.trim().toLowerCase().replace(/\.$/, ''))
    .filter(Boolean);
  if (
    entries.length === 0 ||
    entries.some(
      (entry) => !/^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(entry),
    )
  ) {
    throw new ValueError();
  }
  return [...new Set(entries)];
}

export interface Network {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** CIDR networks, checked here so that a typo stops start-up naming the variable. */
export function parseCidrList(raw: string): Network[] {
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new ValueError();
  return entries.map((entry) => {
    const [address = '', prefixText] = entry.split('/');
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (family === 0 || !(prefix >= 0 && prefix <= max)) throw new ValueError();
    return { address, prefix, family: family === 4 ? 'ipv4' : 'ipv6' };
  });
}

/** A host name that never leaves this machine, where plain http: crosses no network. */
export function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Where a service on this host listening on HOST:port is reached: a wildcard address is reached on loopback. */
export function localUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${bracketed(reachable)}:${port}`;
}

/** An IPv6 address as a URL's host needs it. */
export function bracketed(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
