/**
 * The variables more than one service reads: where each service listens and where the others reach it
 * (`start all` wires them through HOST and the ports), the one size two services must agree on, and the
 * organisation's own mail domains.
 * Declared once here, listed by each service that reads them in its own src/<service>/config.ts, so the
 * reference (docs/configuration.md) names every reader. Specs only: no service code.
 */
import type { ServiceConfigInput } from '../kernel/config.ts';
import { bracketed, byteSize, httpUrl, isLoopback, localUrl, parseDomainList, port } from '../kernel/parsers.ts';
import { defineVariable } from '../kernel/variables.ts';

export const AUTH_PORT = defineVariable({
  name: 'AUTH_PORT',
  meaning: 'HTTP port of the auth service',
  default: '8081',
  ...port(),
});
export const SEAL_PORT = defineVariable({
  name: 'SEAL_PORT',
  meaning: 'HTTP port of the seal service',
  default: '8082',
  ...port(),
});
export const EXCHANGE_PORT = defineVariable({
  name: 'EXCHANGE_PORT',
  meaning: 'HTTP port of the exchange engine',
  default: '8083',
  ...port(),
});

export const AUTH_PUBLIC_URL = defineVariable({
  name: 'AUTH_PUBLIC_URL',
  meaning:
    'public base URL of the auth service (reader links `{AUTH_PUBLIC_URL}/m/{id}`); ' +
    'required in production by auth and seal, where it must be https: so that session cookies are `Secure` ' +
    '(http: only for localhost); unset elsewhere: `http://HOST:AUTH_PORT`',
  ...httpUrl,
});

export const SEAL_URL = defineVariable({
  name: 'SEAL_URL',
  meaning:
    'base URL of the seal service (C seals through it; A reads sealed messages from it); ' +
    'unset: `http://HOST:SEAL_PORT` (127.0.0.1 for a wildcard HOST), the one `start all` runs',
  ...httpUrl,
});

export const EXCHANGE_URL = defineVariable({
  name: 'EXCHANGE_URL',
  meaning:
    'base URL of the exchange engine (reply submission); unset: ' +
    '`http://HOST:EXCHANGE_PORT` (127.0.0.1 for a wildcard HOST)',
  ...httpUrl,
});

export const SEAL_MAX_MESSAGE_SIZE = defineVariable({
  name: 'SEAL_MAX_MESSAGE_SIZE',
  meaning:
    'largest raw message POST /v1/seal accepts (413 above it); the auth service reads ' +
    'sealed messages up to this size for GET /v1/message (set the same value for both)',
  default: '25MiB',
  ...byteSize,
});

/**
 * The organisation's own mail domains: the exchange takes SMTP mail only from senders there, and the auth
 * service gives a sender's code (the sender's page, `/sent`) only to addresses there.
 */
export const INBOUND_SMTP_SENDER_DOMAINS = defineVariable({
  name: 'INBOUND_SMTP_SENDER_DOMAINS',
  meaning:
    'when set, the envelope sender and the From header of SMTP mail must be in one ' +
    'of these domains or their subdomains (550 5.7.1); the null sender <> stays allowed; ' +
    "the auth service sends a sender's sign-in code (`/sent`) only to addresses of these domains",
  parse: parseDomainList,
  expected: 'comma-separated domain names, e.g. example.org,example.com',
});

/** Where another service is reached: its URL variable, else where `start all` runs it on this host. */
export function serviceUrl(url: string | undefined, port: number, input: ServiceConfigInput): string {
  return url ?? localUrl(input.shared.host, port);
}

/**
 * AUTH_PUBLIC_URL, else `http://HOST:AUTH_PORT`. That fallback suits a developer's machine only: in
 * production the reader links (written by seal) must point where readers really go, and a plain http:
 * address drops `Secure` from the session cookies (src/auth/sessions/cookie.ts). http: stays allowed for
 * a loopback address, where nothing crosses a network (compose's default is http://localhost:8081).
 */
export function authPublicUrl(url: string | undefined, authPort: number, input: ServiceConfigInput): string {
  if (input.shared.production && input.starting) {
    const problem = productionPublicUrlProblem(input.env[AUTH_PUBLIC_URL.name], url);
    if (problem) input.problems.push(problem);
  }
  return url ?? `http://${bracketed(input.shared.host)}:${authPort}`;
}

function productionPublicUrlProblem(raw: string | undefined, parsed: string | undefined): string | undefined {
  if (raw === undefined || raw === '') {
    return (
      'AUTH_PUBLIC_URL is not set: production needs the public https:// address ' +
      'of the auth service (reader links from seal, Secure session cookies in auth)'
    );
  }
  if (parsed === undefined) return undefined; // Already reported as not a URL.
  const { protocol, hostname } = new URL(parsed);
  if (protocol === 'http:' && !isLoopback(hostname)) {
    return (
      `AUTH_PUBLIC_URL=${JSON.stringify(raw)} is not valid in production: expected an https:// URL ` +
      '(over http: session cookies lose Secure; http: is accepted only for localhost)'
    );
  }
  return undefined;
}
