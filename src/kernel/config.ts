import { isIP } from 'node:net';
import { randomBytes } from 'node:crypto';
import { parseDuration, formatDuration } from './duration.ts';
import { LANGUAGES, type Language } from './languages.ts';
import type { DkimSettings } from './dkim.ts';

/**
 * All configuration is environment variables, read here once at start (docs/design.md#configuration).
 * Nothing below src/kernel reads process.env: the typed Config is passed in.
 *
 * The variable table is a plain list rather than a JSON-schema library because each value needs a
 * parser with its own message (Go durations, ports, Go booleans) and the same table prints the
 * reference in docs/configuration.md (`sealpost config --markdown`).
 */

type Component = 'all' | 'A' | 'B' | 'C';

interface VariableSpec<T> {
  name: string;
  component: Component;
  meaning: string;
  /** Default as the operator would type it; undefined means "unset". */
  default?: string;
  /** Secrets are never echoed back in error messages or the effective-config dump. */
  secret?: boolean;
  parse: (raw: string) => T;
  expected: string;
}

class ValueError extends Error {}

const text = (raw: string) => raw;
const nonEmpty = (raw: string) => {
  if (raw.trim() === '') throw new ValueError();
  return raw;
};

function integer(min: number, max: number) {
  return (raw: string) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new ValueError();
    const value = Number(raw.trim());
    if (!Number.isSafeInteger(value) || value < min || value > max) throw new ValueError();
    return value;
  };
}
const port = integer(0, 65535);

/** Go's strconv.ParseBool, because the spec's booleans come from a Go service. */
function boolean(raw: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  throw new ValueError();
}

function duration(raw: string): bigint {
  try {
    return parseDuration(raw);
  } catch {
    throw new ValueError();
  }
}
function positiveDuration(raw: string): bigint {
  const value = duration(raw);
  if (value <= 0n) throw new ValueError();
  return value;
}

/** A URL whose scheme fits what the variable points at: a relay is not reached over http:, nor a database. */
function url(...schemes: string[]) {
  return (raw: string): string => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new ValueError();
    }
    if (!schemes.includes(parsed.protocol)) throw new ValueError();
    return raw.replace(/\/+$/, '');
  };
}
const httpUrl = url('http:', 'https:');
const HTTP_URL = 'an http:// or https:// URL';

/**
 * One mailbox, `Name <address>` or a bare address, whose address is plausible; kept as written. The
 * check is here so that a typo stops start-up instead of every reply.
 */
function mailboxText(raw: string): string {
  const match = /^\s*(?:"?([^"<>]*)"?\s*<([^<>\s]+)>|([^<>\s]+))\s*$/.exec(raw);
  const address = match?.[2] ?? match?.[3];
  if (!address || !/^[^@\s]+@[^@\s]+\.[^@\s]+$|^[^@\s]+@localhost$/.test(address)) throw new ValueError();
  return raw.trim();
}

/** A domain name, lower-cased, without a trailing dot. */
function domainName(raw: string): string {
  const domain = raw.trim().toLowerCase().replace(/\.$/, '');
  if (!/^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/.test(domain)) throw new ValueError();
  return domain;
}

/** A DKIM selector: one or more DNS labels (RFC 6376 §3.1). */
function selectorName(raw: string): string {
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(raw.trim())) throw new ValueError();
  return raw.trim();
}

function oneOf<T extends string>(...values: T[]) {
  return (raw: string) => {
    if (!values.includes(raw as T)) throw new ValueError();
    return raw as T;
  };
}

/** Byte sizes: a plain number of bytes, or with a binary suffix (25MiB, 512KiB, 1GiB). */
function byteSize(raw: string): number {
  const match = /^(\d+)\s*(B|KiB|MiB|GiB)?$/.exec(raw.trim());
  if (!match) throw new ValueError();
  const factor = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }[(match[2] ?? 'B') as 'B'];
  const value = Number(match[1]) * factor;
  if (!Number.isSafeInteger(value) || value <= 0) throw new ValueError();
  return value;
}

/** Executables and scripts (Windows, Unix, Java, Android, installers, shortcuts), as extensions and MIME types. */
const FORBIDDEN_TYPES_DEFAULT = [
  'exe,dll,msi,msp,mst,bat,cmd,com,scr,pif,cpl,hta,js,jse,mjs,vbs,vbe,vb,wsf,wsh,wsc,ps1,psm1,psd1,msc,reg,inf,lnk,scf,gadget,appx,msix',
  'jar,class,sh,bash,csh,ksh,zsh,command,elf,macho,apk,dex,deb,rpm',
  'application/x-msdownload,application/x-dosexec,application/x-msi,application/x-ms-shortcut,application/x-elf,application/x-mach-binary',
  'application/java-archive,application/java-vm,application/x-sh,text/x-shellscript,application/vnd.android.package-archive',
  'application/vnd.debian.binary-package,application/x-rpm',
].join(',');

const DURATION = 'a duration string such as 15m, 1h30m or 336h';
const BOOLEAN = 'a boolean (true or false)';
const PORT = 'a port number from 0 to 65535';

function v<T>(spec: VariableSpec<T>): VariableSpec<T> {
  return spec;
}

/** Every variable Sealpost reads, in the order docs/configuration.md lists them. */
export const VARIABLES = {
  NODE_ENV: v({ name: 'NODE_ENV', component: 'all', meaning: '`production` turns off generated tokens, the log SMS provider and starter rules', default: 'development', parse: oneOf('development', 'production', 'test'), expected: 'development, production or test' }),
  LOG_LEVEL: v({ name: 'LOG_LEVEL', component: 'all', meaning: 'pino log level', default: 'info', parse: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'), expected: 'fatal, error, warn, info, debug, trace or silent' }),
  LOG_FORMAT: v({ name: 'LOG_FORMAT', component: 'all', meaning: '`pretty`: one human line per event; `json`: one JSON object per line (for a log collector); `auto`: pretty when standard output is a terminal, JSON otherwise. Each request is logged at `debug`', default: 'auto', parse: oneOf('auto', 'json', 'pretty'), expected: 'auto, json or pretty' }),
  HOST: v({ name: 'HOST', component: 'all', meaning: 'address every listener binds to', default: '127.0.0.1', parse: nonEmpty, expected: 'a host name or IP address' }),
  AUTH_PORT: v({ name: 'AUTH_PORT', component: 'A', meaning: 'HTTP port of the auth service', default: '8081', parse: port, expected: PORT }),
  SEAL_PORT: v({ name: 'SEAL_PORT', component: 'B', meaning: 'HTTP port of the seal service', default: '8082', parse: port, expected: PORT }),
  EXCHANGE_PORT: v({ name: 'EXCHANGE_PORT', component: 'C', meaning: 'HTTP port of the exchange engine', default: '8083', parse: port, expected: PORT }),
  INBOUND_SMTP_PORT: v({ name: 'INBOUND_SMTP_PORT', component: 'C', meaning: 'port of the inbound SMTP server', default: '2525', parse: port, expected: PORT }),
  SEALPOST_DATA_DIR: v({ name: 'SEALPOST_DATA_DIR', component: 'all', meaning: 'folder of the embedded defaults (PGlite database, local objects, outbox)', default: './data', parse: nonEmpty, expected: 'a folder path' }),
  DATABASE_URL: v({ name: 'DATABASE_URL', component: 'all', meaning: 'PostgreSQL connection string; unset: embedded PGlite in `$SEALPOST_DATA_DIR/pg`', secret: true, parse: url('postgres:', 'postgresql:'), expected: 'a postgres:// or postgresql:// URL' }),
  DATABASE_POOL_SIZE: v({ name: 'DATABASE_POOL_SIZE', component: 'all', meaning: 'PostgreSQL connections per process', default: '10', parse: integer(1, 1000), expected: 'an integer from 1 to 1000' }),
  S3_ENDPOINT: v({ name: 'S3_ENDPOINT', component: 'all', meaning: 'S3 endpoint URL; unset: AWS', parse: httpUrl, expected: HTTP_URL }),
  S3_BUCKET: v({ name: 'S3_BUCKET', component: 'all', meaning: 'bucket for payloads and attachments; unset: local disk in `$SEALPOST_DATA_DIR/objects`', parse: nonEmpty, expected: 'a bucket name' }),
  S3_REGION: v({ name: 'S3_REGION', component: 'all', meaning: 'S3 region', default: 'us-east-1', parse: nonEmpty, expected: 'a region name' }),
  S3_ACCESS_KEY_ID: v({ name: 'S3_ACCESS_KEY_ID', component: 'all', meaning: 'S3 access key; unset: the AWS default credential chain', parse: text, expected: 'an access key id' }),
  S3_SECRET_ACCESS_KEY: v({ name: 'S3_SECRET_ACCESS_KEY', component: 'all', meaning: 'S3 secret key', secret: true, parse: text, expected: 'a secret key' }),
  S3_FORCE_PATH_STYLE: v({ name: 'S3_FORCE_PATH_STYLE', component: 'all', meaning: 'path-style bucket addressing (needed by most self-hosted S3 servers)', default: 'true', parse: boolean, expected: BOOLEAN }),
  ADMIN_TOKEN: v({ name: 'ADMIN_TOKEN', component: 'all', meaning: 'bearer token of the configuration endpoints of B and C; generated and printed at start when unset outside production', secret: true, parse: nonEmpty, expected: 'a non-empty token' }),
  SERVICE_TOKEN: v({ name: 'SERVICE_TOKEN', component: 'all', meaning: 'bearer token of service-to-service calls; generated and printed at start when unset outside production', secret: true, parse: nonEmpty, expected: 'a non-empty token' }),
  HTTP_IDLE_TIMEOUT: v({ name: 'HTTP_IDLE_TIMEOUT', component: 'all', meaning: 'a client that sends nothing this long while a request waits for its headers or body (or between requests) gets 408 and is disconnected; an upload that keeps sending is never cut', default: '30s', parse: positiveDuration, expected: DURATION }),
  HTTP_MAX_CONNECTIONS: v({ name: 'HTTP_MAX_CONNECTIONS', component: 'all', meaning: 'HTTP connections one service keeps open at once; further ones are closed at once and counted in http_connections_refused_total', default: '4096', parse: integer(1, 1000000), expected: 'an integer from 1 to 1000000' }),
  SHUTDOWN_TIMEOUT: v({ name: 'SHUTDOWN_TIMEOUT', component: 'all', meaning: 'how long a graceful shutdown may take before the process exits anyway', default: '10s', parse: positiveDuration, expected: DURATION }),

  AUTH_PUBLIC_URL: v({ name: 'AUTH_PUBLIC_URL', component: 'A', meaning: 'public base URL of the auth service (reader links `{AUTH_PUBLIC_URL}/m/{id}`); required in production by auth and seal, where it must be https: so that session cookies are `Secure` (http: only for localhost); unset elsewhere: `http://HOST:AUTH_PORT`', parse: httpUrl, expected: HTTP_URL }),
  SMS_CODE_EXPIRATION: v({ name: 'SMS_CODE_EXPIRATION', component: 'A', meaning: 'lifetime of an SMS verification code', default: '15m', parse: positiveDuration, expected: DURATION }),
  ATTACHMENTS_RETENTION_PERIOD: v({ name: 'ATTACHMENTS_RETENTION_PERIOD', component: 'A', meaning: 'minimum time unsent attachment files are kept before they may be deleted', default: '336h', parse: positiveDuration, expected: DURATION }),
  EXPIRED_ATTACHMENTS_WATCHER_INTERVAL: v({ name: 'EXPIRED_ATTACHMENTS_WATCHER_INTERVAL', component: 'A', meaning: 'interval of the process that deletes expired attachments', default: '1h', parse: positiveDuration, expected: DURATION }),
  ATTACHMENT_MAX_SIZE: v({ name: 'ATTACHMENT_MAX_SIZE', component: 'A', meaning: 'largest reply attachment (`file_too_large` above it; the upload is cut off there)', default: '17MiB', parse: byteSize, expected: 'a byte size such as 26214400, 512KiB, 25MiB or 1GiB' }),
  REPLY_MAX_TOTAL_SIZE: v({ name: 'REPLY_MAX_TOTAL_SIZE', component: 'A', meaning: "all attachments of one reply together (`upload_limit_reached` above it); the exchange's SMTP_MAX_MESSAGE_SIZE must allow about 4/3 of it (base64); the default fits the default 25MiB, the size most mailboxes take", default: '17MiB', parse: byteSize, expected: 'a byte size such as 26214400, 512KiB, 25MiB or 1GiB' }),
  ATTACHMENT_FORBIDDEN_TYPES: v({ name: 'ATTACHMENT_FORBIDDEN_TYPES', component: 'A', meaning: 'attachment types refused with `forbidden_file_type`, comma-separated: file extensions (matched against the name and the type detected from the content) and MIME types (matched against the detected type); empty allows all', default: FORBIDDEN_TYPES_DEFAULT, parse: typeList, expected: 'a comma-separated list of extensions (exe) and MIME types (application/x-msdownload)' }),
  CLAMD_HOST: v({ name: 'CLAMD_HOST', component: 'A', meaning: 'ClamAV daemon (clamd) that scans every attachment over INSTREAM; scanning is on when set', parse: nonEmpty, expected: 'a host name or IP address' }),
  CLAMD_PORT: v({ name: 'CLAMD_PORT', component: 'A', meaning: "clamd's TCP port", default: '3310', parse: integer(1, 65535), expected: 'a port number from 1 to 65535' }),
  CLAMD_TIMEOUT: v({ name: 'CLAMD_TIMEOUT', component: 'A', meaning: "time limit for connecting to clamd and for its verdict once the file is sent (clamd's StreamMaxLength should be at least ATTACHMENT_MAX_SIZE)", default: '30s', parse: positiveDuration, expected: DURATION }),
  ATTACHMENTS_REQUIRE_SCAN: v({ name: 'ATTACHMENTS_REQUIRE_SCAN', component: 'A', meaning: 'refuse uploads (503) while clamd cannot scan them; false accepts them unscanned with a warning in the log', default: 'false', parse: boolean, expected: BOOLEAN }),
  AUTH_SECRET: v({ name: 'AUTH_SECRET', component: 'A', meaning: 'secret from which the keys of code HMACs and CSRF tokens are derived; the same on every auth instance; required in production, generated into the data folder otherwise', secret: true, parse: authSecret, expected: 'at least 32 characters (e.g. `openssl rand -hex 32`)' }),
  AUTH_TRUST_PROXY: v({ name: 'AUTH_TRUST_PROXY', component: 'A', meaning: 'client IP (per-IP SMS limit) from X-Forwarded-For: false uses the connection address; true or a number N trusts that many proxy hops (the N-th address from the right)', default: 'false', parse: proxyHops, expected: 'a boolean or a number of proxy hops from 0 to 10' }),
  AUTH_MAIL_FROM: v({ name: 'AUTH_MAIL_FROM', component: 'A', meaning: 'From address of sign-in codes sent by email', default: 'Sealpost <no-reply@localhost>', parse: nonEmpty, expected: 'an address, optionally with a display name' }),
  REPLY_FROM: v({ name: 'REPLY_FROM', component: 'A', meaning: 'From address and envelope sender of replies, in the organisation\'s domain so that SPF and DKIM align (DMARC); the recipient shows in the display name ("alice@example.com via <its display name>") and in Reply-To; default: AUTH_MAIL_FROM', parse: mailboxText, expected: 'an address, optionally with a display name: Example Org <replies@example.org>' }),
  REPLY_FROM_RECIPIENT: v({ name: 'REPLY_FROM_RECIPIENT', component: 'A', meaning: "true: replies go out From the recipient's own address, also as envelope sender (for a relay that delivers internally only); such replies fail DMARC wherever the recipient's domain publishes p=reject", default: 'false', parse: boolean, expected: BOOLEAN }),
  SMS_PROVIDER: v({ name: 'SMS_PROVIDER', component: 'A', meaning: 'SMS provider: `http` (JSON {to, from, text} with Basic auth), `twilio` (Messages API) or `log` (prints the code; refused in production); default `log` outside production, required in production', parse: oneOf('http', 'twilio', 'log'), expected: 'http, twilio or log' }),
  SMS_PROVIDER_URL: v({ name: 'SMS_PROVIDER_URL', component: 'A', meaning: 'http: the URL codes are POSTed to; twilio: the API base URL (default https://api.twilio.com)', parse: httpUrl, expected: HTTP_URL }),
  SMS_PROVIDER_USER: v({ name: 'SMS_PROVIDER_USER', component: 'A', meaning: 'http: Basic auth user; twilio: the account SID', parse: text, expected: 'a user name or account SID' }),
  SMS_PROVIDER_PASSWORD: v({ name: 'SMS_PROVIDER_PASSWORD', component: 'A', meaning: 'http: Basic auth password; twilio: the auth token', secret: true, parse: text, expected: 'a password or auth token' }),
  SMS_SENDER: v({ name: 'SMS_SENDER', component: 'A', meaning: 'sender of the SMS (`from`; for twilio a number, or a messaging service SID starting with MG)', default: 'Sealpost', parse: nonEmpty, expected: 'a sender name or number' }),
  SMS_TEXT: v({ name: 'SMS_TEXT', component: 'A', meaning: 'text of the code SMS; `{code}` is replaced by the code', default: 'Your Sealpost code is {code}', parse: smsText, expected: 'a text containing {code}' }),
  SMS_PROVIDER_TIMEOUT: v({ name: 'SMS_PROVIDER_TIMEOUT', component: 'A', meaning: 'time limit of one call to the SMS provider (or the mail relay for email codes); past it the request fails with 502', default: '10s', parse: positiveDuration, expected: DURATION }),
  SMS_LIMIT_NUMBER_INTERVAL: v({ name: 'SMS_LIMIT_NUMBER_INTERVAL', component: 'A', meaning: 'shortest time between two codes sent to the same mobile number (or email address); 0s turns it off', default: '60s', parse: nonNegativeDuration, expected: DURATION }),
  SMS_LIMIT_NUMBER_HOURLY: v({ name: 'SMS_LIMIT_NUMBER_HOURLY', component: 'A', meaning: 'codes sent to the same mobile number (or email address) per hour', default: '5', parse: integer(1, 100000), expected: 'an integer from 1 to 100000' }),
  SMS_LIMIT_IP_HOURLY: v({ name: 'SMS_LIMIT_IP_HOURLY', component: 'A', meaning: 'codes requested from the same client IP (IPv6: the same /64) per hour', default: '20', parse: integer(1, 100000), expected: 'an integer from 1 to 100000' }),
  CODE_MAX_ATTEMPTS: v({ name: 'CODE_MAX_ATTEMPTS', component: 'A', meaning: 'wrong tries after which a code is void (a resend keeps the count of the code it replaces)', default: '5', parse: integer(1, 100), expected: 'an integer from 1 to 100' }),
  SESSION_REMEMBER_ME_MAX_AGE: v({ name: 'SESSION_REMEMBER_ME_MAX_AGE', component: 'A', meaning: "lifetime of a 'keep me signed in' session (the cookie's Max-Age)", default: '720h', parse: positiveDuration, expected: DURATION }),
  SESSION_IDLE_TIMEOUT: v({ name: 'SESSION_IDLE_TIMEOUT', component: 'A', meaning: 'a session without remember-me ends when unused this long', default: '1h', parse: positiveDuration, expected: DURATION }),
  SESSION_ABSOLUTE_TIMEOUT: v({ name: 'SESSION_ABSOLUTE_TIMEOUT', component: 'A', meaning: 'a session without remember-me ends this long after it started or signed in, however busy', default: '12h', parse: positiveDuration, expected: DURATION }),
  SESSION_CLEANUP_INTERVAL: v({ name: 'SESSION_CLEANUP_INTERVAL', component: 'A', meaning: 'how often expired sessions and old rate-limit records are deleted', default: '10m', parse: positiveDuration, expected: DURATION }),

  IPFS_CLUSTER_HOST: v({ name: 'IPFS_CLUSTER_HOST', component: 'B', meaning: 'fallback cluster host (used only when no configuration was stored through POST /v1/ipfs/config)', parse: nonEmpty, expected: 'a host name or IP address' }),
  IPFS_CLUSTER_PORT: v({ name: 'IPFS_CLUSTER_PORT', component: 'B', meaning: 'fallback cluster port', default: '9094', parse: (raw: string) => String(integer(1, 65535)(raw)), expected: 'a port number from 1 to 65535' }),
  IPFS_CLUSTER_USER: v({ name: 'IPFS_CLUSTER_USER', component: 'B', meaning: 'fallback cluster user (Basic auth)', parse: text, expected: 'a user name' }),
  IPFS_CLUSTER_PASS: v({ name: 'IPFS_CLUSTER_PASS', component: 'B', meaning: 'fallback cluster password (Basic auth)', secret: true, parse: text, expected: 'a password' }),
  IPFS_CLUSTER_SECURE: v({ name: 'IPFS_CLUSTER_SECURE', component: 'B', meaning: 'fallback use of HTTPS', default: 'true', parse: boolean, expected: BOOLEAN }),
  IPFS_PROXY_PORT: v({ name: 'IPFS_PROXY_PORT', component: 'B', meaning: 'port of the IPFS HTTP API proxied by each cluster peer (reading content)', default: '9095', parse: integer(1, 65535), expected: 'a port number from 1 to 65535' }),
  SEAL_MASTER_KEY: v({ name: 'SEAL_MASTER_KEY', component: 'B', meaning: 'key that wraps message keys and stored cluster passwords: 32 bytes as 64 hex digits or base64; generated into the data folder when unset outside production', secret: true, parse: masterKey, expected: '32 bytes as 64 hex digits or as base64' }),
  IPFS_CLUSTER_CA_FILE: v({ name: 'IPFS_CLUSTER_CA_FILE', component: 'B', meaning: 'PEM file of extra certificate authorities trusted for HTTPS to the clusters (e.g. a self-signed cluster certificate), beside the public roots', parse: nonEmpty, expected: 'a file path' }),
  SEAL_MAX_MESSAGE_SIZE: v({ name: 'SEAL_MAX_MESSAGE_SIZE', component: 'B', meaning: 'largest raw message POST /v1/seal accepts (413 above it); the auth service reads sealed messages up to this size for GET /v1/message (set the same value for both)', default: '25MiB', parse: byteSize, expected: 'a byte size such as 26214400, 512KiB, 25MiB or 1GiB' }),
  SEAL_REPIN_INTERVAL: v({ name: 'SEAL_REPIN_INTERVAL', component: 'B', meaning: 'first delay before a pin in error (refused, unreachable, or failed in IPFS) is pinned again; then doubling up to 1h', default: '1m', parse: positiveDuration, expected: DURATION }),
  SEAL_PIN_CHECK_INTERVAL: v({ name: 'SEAL_PIN_CHECK_INTERVAL', component: 'B', meaning: 'how often a pin a cluster accepted but does not hold yet (`pinning`) is looked at again (GET /pins/{cid})', default: '5s', parse: positiveDuration, expected: DURATION }),
  SEAL_PIN_DEADLINE: v({ name: 'SEAL_PIN_DEADLINE', component: 'B', meaning: 'a sealed message not pinned on every cluster this long after sealing is logged as an error and counted in seal_pins_overdue', default: '10m', parse: positiveDuration, expected: DURATION }),

  INBOUND_SMTP_TLS: v({ name: 'INBOUND_SMTP_TLS', component: 'C', meaning: 'enables TLS (STARTTLS) on the inbound SMTP server', default: 'false', parse: boolean, expected: BOOLEAN }),
  INBOUND_SMTP_TLS_PUBLIC_KEY: v({ name: 'INBOUND_SMTP_TLS_PUBLIC_KEY', component: 'C', meaning: 'path to a file holding the server certificate (PEM)', parse: nonEmpty, expected: 'a file path' }),
  INBOUND_SMTP_TLS_PRIVATE_KEY: v({ name: 'INBOUND_SMTP_TLS_PRIVATE_KEY', component: 'C', meaning: 'path to a file holding the server private key (PEM)', parse: nonEmpty, expected: 'a file path' }),
  INBOUND_SMTP_ALLOWED_NETWORKS: v({ name: 'INBOUND_SMTP_ALLOWED_NETWORKS', component: 'C', meaning: "clients in these networks may submit mail over SMTP without authenticating (Postfix's mynetworks); every other client must AUTH after STARTTLS", default: '127.0.0.0/8,::1/128', parse: cidrList, expected: 'comma-separated IPv4/IPv6 networks in CIDR notation, e.g. 127.0.0.0/8,10.1.0.0/16,::1/128' }),
  INBOUND_SMTP_USERS_FILE: v({ name: 'INBOUND_SMTP_USERS_FILE', component: 'C', meaning: 'htpasswd file of the SMTP AUTH accounts, bcrypt entries only (`sealpost smtp-user add NAME` or `htpasswd -B` writes them), read at start; unset: no AUTH, only the allowed networks submit', parse: nonEmpty, expected: 'a file path' }),
  INBOUND_SMTP_SENDER_DOMAINS: v({ name: 'INBOUND_SMTP_SENDER_DOMAINS', component: 'C', meaning: 'when set, the envelope sender and the From header of SMTP mail must be in one of these domains or their subdomains (550 5.7.1); the null sender <> stays allowed', parse: domainList, expected: 'comma-separated domain names, e.g. example.org,example.com' }),
  SMTP_MAX_MESSAGE_SIZE: v({ name: 'SMTP_MAX_MESSAGE_SIZE', component: 'C', meaning: 'largest message accepted over SMTP and JSON (advertised in EHLO; 552 above it)', default: '25MiB', parse: byteSize, expected: 'a byte size such as 26214400, 512KiB, 25MiB or 1GiB' }),
  SMTP_MAX_RECIPIENTS: v({ name: 'SMTP_MAX_RECIPIENTS', component: 'C', meaning: 'recipients per message (452 above it)', default: '100', parse: integer(1, 100000), expected: 'an integer from 1 to 100000' }),
  SMTP_MAX_CONNECTIONS: v({ name: 'SMTP_MAX_CONNECTIONS', component: 'C', meaning: 'concurrent inbound SMTP connections (421 above it)', default: '1000', parse: integer(1, 1000000), expected: 'an integer from 1 to 1000000' }),
  SMTP_HOSTNAME: v({ name: 'SMTP_HOSTNAME', component: 'C', meaning: 'name in the SMTP greeting, Received headers and bounces', default: 'localhost', parse: nonEmpty, expected: 'a host name' }),
  SMTP_REVERSE_LOOKUP: v({ name: 'SMTP_REVERSE_LOOKUP', component: 'C', meaning: "look up the client's reverse DNS name for the Received header", default: 'false', parse: boolean, expected: BOOLEAN }),
  OUTBOUND_SMTP_URL: v({ name: 'OUTBOUND_SMTP_URL', component: 'C', meaning: 'relay for outbound mail, also used by A for email codes (smtp:// or smtps://, credentials in the URL); unset: `.eml` files in `$SEALPOST_DATA_DIR/outbox`', secret: true, parse: url('smtp:', 'smtps:'), expected: 'an smtp:// or smtps:// URL' }),
  NOTIFY_FROM: v({ name: 'NOTIFY_FROM', component: 'C', meaning: 'From address of reader-link notifications and bounces', default: 'Sealpost <no-reply@localhost>', parse: nonEmpty, expected: 'an address, optionally with a display name' }),
  DKIM_DOMAIN: v({ name: 'DKIM_DOMAIN', component: 'C', meaning: "domain that signs (d=) the mail Sealpost writes — notifications, bounces, A's email codes — and relayed mail whose From is in it or a subdomain (replies, with REPLY_FROM there); set with DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE; unset: nothing is signed", parse: domainName, expected: 'a domain name such as example.org' }),
  DKIM_SELECTOR: v({ name: 'DKIM_SELECTOR', component: 'C', meaning: 'DKIM selector (s=): the public key is published at <selector>._domainkey.<DKIM_DOMAIN>', parse: selectorName, expected: 'a DNS label such as sealpost or s2026' }),
  DKIM_PRIVATE_KEY_FILE: v({ name: 'DKIM_PRIVATE_KEY_FILE', component: 'C', meaning: 'PEM file of the DKIM private key, RSA (rsa-sha256, 1024 bits at least) or Ed25519 (ed25519-sha256); `sealpost dkim-key generate` writes one and prints the DNS record', parse: nonEmpty, expected: 'a file path' }),
  NOTIFY_DEFAULT_LANGUAGE: v({ name: 'NOTIFY_DEFAULT_LANGUAGE', component: 'C', meaning: "language of notifications, and of A's email codes, for recipients the sender gave none (JSON `recipients[].language`, header `X-Sealpost-Language: <email>=<language>`)", default: 'en', parse: oneOf(...LANGUAGES), expected: LANGUAGES.join(', ') }),
  DELIVERY_CONCURRENCY: v({ name: 'DELIVERY_CONCURRENCY', component: 'C', meaning: 'messages delivered at once by one engine instance (also the most relay connections it opens)', default: '32', parse: integer(1, 1000), expected: 'an integer from 1 to 1000' }),
  DELIVERY_MAX_RETRIES: v({ name: 'DELIVERY_MAX_RETRIES', component: 'C', meaning: 'retries after the first attempt before a message fails and bounces', default: '10', parse: integer(0, 1000), expected: 'an integer from 0 to 1000' }),
  DELIVERY_RETRY_BASE: v({ name: 'DELIVERY_RETRY_BASE', component: 'C', meaning: 'delay before the first retry; doubles each time, with jitter', default: '1m', parse: positiveDuration, expected: DURATION }),
  DELIVERY_RETRY_MAX: v({ name: 'DELIVERY_RETRY_MAX', component: 'C', meaning: 'longest delay between two retries', default: '1h', parse: positiveDuration, expected: DURATION }),
  DELIVERY_LEASE: v({ name: 'DELIVERY_LEASE', component: 'C', meaning: "how long a worker owns a message; a crashed worker's message is taken again after it", default: '5m', parse: positiveDuration, expected: DURATION }),
  DELIVERY_ENABLED: v({ name: 'DELIVERY_ENABLED', component: 'C', meaning: 'false: this instance takes mail (SMTP, JSON) but delivers none, leaving it to the instances on the same database that do (an intake-only instance, or delivery held for maintenance)', default: 'true', parse: boolean, expected: BOOLEAN }),
  DELIVERY_POLL_INTERVAL: v({ name: 'DELIVERY_POLL_INTERVAL', component: 'C', meaning: 'how often idle workers look for due messages (retries, and mail taken by other instances); mail this instance takes is claimed at once', default: '1s', parse: positiveDuration, expected: DURATION }),
  STATUS_ARCHIVE_AFTER: v({ name: 'STATUS_ARCHIVE_AFTER', component: 'C', meaning: 'age at which status history rows move to message_status_archive', default: '720h', parse: positiveDuration, expected: DURATION }),
  STATUS_ARCHIVE_RETENTION: v({ name: 'STATUS_ARCHIVE_RETENTION', component: 'C', meaning: 'age at which archived status rows are deleted (10 years)', default: '87600h', parse: positiveDuration, expected: DURATION }),
  STATUS_ARCHIVE_INTERVAL: v({ name: 'STATUS_ARCHIVE_INTERVAL', component: 'C', meaning: 'how often the archive job runs', default: '1h', parse: positiveDuration, expected: DURATION }),
  SEAL_URL: v({ name: 'SEAL_URL', component: 'C', meaning: 'base URL of the seal service (C seals through it; A reads sealed messages from it); unset: `http://HOST:SEAL_PORT` (127.0.0.1 for a wildcard HOST), the one `start all` runs', parse: httpUrl, expected: HTTP_URL }),
  EXCHANGE_URL: v({ name: 'EXCHANGE_URL', component: 'A', meaning: 'base URL of the exchange engine (reply submission); unset: `http://HOST:EXCHANGE_PORT` (127.0.0.1 for a wildcard HOST)', parse: httpUrl, expected: HTTP_URL }),
} as const;

export type VariableName = keyof typeof VARIABLES;
type Parsed<N extends VariableName> = ReturnType<(typeof VARIABLES)[N]['parse']>;

function nonNegativeDuration(raw: string): bigint {
  const value = duration(raw);
  if (value < 0n) throw new ValueError();
  return value;
}

/** HMAC keys are derived from it: shorter secrets are guessable offline from one stolen code hash. */
function authSecret(raw: string): string {
  if (raw.length < 32) throw new ValueError();
  return raw;
}

/** CIDR networks, checked here so that a typo stops start-up naming the variable. */
function cidrList(raw: string): Array<{ address: string; prefix: number; family: 'ipv4' | 'ipv6' }> {
  const entries = raw.split(',').map((entry) => entry.trim()).filter(Boolean);
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

function domainList(raw: string): string[] {
  const entries = raw.split(',').map((entry) => entry.trim().toLowerCase().replace(/\.$/, '')).filter(Boolean);
  if (entries.length === 0 || entries.some((entry) => !/^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(entry))) {
    throw new ValueError();
  }
  return [...new Set(entries)];
}

function typeList(raw: string): string[] {
  const entries = raw.split(',').map((entry) => entry.trim().toLowerCase().replace(/^\./, '')).filter(Boolean);
  if (entries.some((entry) => !/^[a-z0-9][a-z0-9+.-]*(\/[a-z0-9][a-z0-9!#$&^_.+-]*)?$/.test(entry))) throw new ValueError();
  return [...new Set(entries)];
}

function proxyHops(raw: string): number {
  if (/^\d+$/.test(raw.trim())) return integer(0, 10)(raw);
  return boolean(raw) ? 1 : 0;
}

function smsText(raw: string): string {
  if (!raw.includes('{code}')) throw new ValueError();
  return raw;
}

function masterKey(raw: string): Buffer {
  const value = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (value.length !== 32) throw new ValueError();
  return value;
}

/**
 * The fallback `http://HOST:AUTH_PORT` suits a developer's machine only: in production the reader links
 * must point where readers really go, and a plain http: address drops `Secure` from the session cookies
 * (src/auth/sessions/cookie.ts). http: stays allowed for a loopback address, where nothing crosses a
 * network (compose's default is http://localhost:8081).
 */
function productionPublicUrlProblem(raw: string | undefined, parsed: string | undefined): string | undefined {
  if (raw === undefined || raw === '') {
    return 'AUTH_PUBLIC_URL is not set: production needs the public https:// address of the auth service (reader links from seal, Secure session cookies in auth)';
  }
  if (parsed === undefined) return undefined; // Already reported as not a URL.
  const { protocol, hostname } = new URL(parsed);
  if (protocol === 'http:' && !isLoopback(hostname)) {
    return `AUTH_PUBLIC_URL=${JSON.stringify(raw)} is not valid in production: expected an https:// URL (over http: session cookies lose Secure; http: is accepted only for localhost)`;
  }
  return undefined;
}

function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export class ConfigError extends Error {
  constructor(
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`, options);
    this.name = 'ConfigError';
  }
}

/** The services a process can start; loadConfig checks the requirements of those it is told about. */
export type ServiceName = 'auth' | 'seal' | 'exchange';

export interface LoadOptions {
  /**
   * The services this process starts, so that what only they need is required (AUTH_PUBLIC_URL in
   * production for auth). Callers that only read values (tests, `sealpost migrate`) leave it out.
   */
  services?: readonly ServiceName[];
}

export interface Config {
  env: 'development' | 'production' | 'test';
  production: boolean;
  logLevel: string;
  logFormat: 'auto' | 'json' | 'pretty';
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  s3: {
    endpoint: string | undefined;
    bucket: string | undefined;
    region: string;
    accessKeyId: string | undefined;
    secretAccessKey: string | undefined;
    forcePathStyle: boolean;
  };
  adminToken: string;
  serviceToken: string;
  /** Names of the tokens generated at this start, so the CLI can print them once. */
  generatedTokens: Array<'ADMIN_TOKEN' | 'SERVICE_TOKEN'>;
  shutdownTimeout: bigint;
  /** HTTP_IDLE_TIMEOUT and HTTP_MAX_CONNECTIONS, for every service's HTTP server. */
  http: { idleTimeout: bigint; maxConnections: number };
  auth: {
    port: number;
    publicUrl: string;
    exchangeUrl: string;
    smsCodeExpiration: bigint;
    attachmentsRetentionPeriod: bigint;
    expiredAttachmentsWatcherInterval: bigint;
    /** Reply attachments: limits, forbidden types and the malware scanner (src/auth/attachments). */
    attachments: {
      maxSize: number;
      replyMaxTotalSize: number;
      forbiddenTypes: string[];
      /** Undefined when CLAMD_HOST is unset: no scanning. */
      clamd: { host: string; port: number; timeout: bigint } | undefined;
      requireScan: boolean;
    };
    /** SEAL_URL: the auth service reads sealed messages from B. */
    sealUrl: string;
    /** OUTBOUND_SMTP_URL: email codes go through the same relay as the exchange's mail. */
    outboundSmtpUrl: string | undefined;
    mailFrom: string;
    /** DKIM_*: the email codes are signed too. */
    dkim: DkimSettings | undefined;
    /** REPLY_FROM, or AUTH_MAIL_FROM when unset. */
    replyFrom: string;
    replyFromRecipient: boolean;
    /** NOTIFY_DEFAULT_LANGUAGE: email codes to recipients the sender gave no language. */
    defaultLanguage: Language;
    /** Undefined: generated into the data folder (refused in production, see src/auth/secret.ts). */
    secret: string | undefined;
    /** Proxy hops trusted for X-Forwarded-For; 0 uses the connection's address. */
    trustProxyHops: number;
    sms: {
      /** Undefined in production when SMS_PROVIDER is unset (the auth service refuses to start). */
      provider: 'http' | 'twilio' | 'log' | undefined;
      url: string | undefined;
      user: string | undefined;
      password: string | undefined;
      sender: string;
      text: string;
      timeout: bigint;
    };
    limits: { numberInterval: bigint; numberHourly: number; ipHourly: number };
    codeMaxAttempts: number;
    session: { rememberMeMaxAge: bigint; idleTimeout: bigint; absoluteTimeout: bigint; cleanupInterval: bigint };
  };
  seal: {
    port: number;
    /** The IPFS_CLUSTER_* fallback; undefined when IPFS_CLUSTER_HOST is unset. */
    envCluster: { host: string; port: string; user?: string; pass?: string; secure: boolean } | undefined;
    ipfsProxyPort: number;
    masterKey: Buffer | undefined;
    clusterCaFile: string | undefined;
    maxMessageSize: number;
    repinInterval: bigint;
    pinCheckInterval: bigint;
    pinDeadline: bigint;
  };
  exchange: {
    port: number;
    smtpPort: number;
    sealUrl: string;
    inboundSmtpTls: { certPath: string; keyPath: string } | undefined;
    inboundSmtpAllowedNetworks: Array<{ address: string; prefix: number; family: 'ipv4' | 'ipv6' }>;
    inboundSmtpUsersFile: string | undefined;
    inboundSmtpSenderDomains: string[] | undefined;
    smtpMaxMessageSize: number;
    smtpMaxRecipients: number;
    smtpMaxConnections: number;
    smtpHostname: string;
    smtpReverseLookup: boolean;
    outboundSmtpUrl: string | undefined;
    notifyFrom: string;
    notifyDefaultLanguage: Language;
    /** DKIM_*: undefined when not configured (nothing signed). */
    dkim: DkimSettings | undefined;
    delivery: {
      enabled: boolean;
      concurrency: number;
      maxRetries: number;
      retryBase: bigint;
      retryMax: bigint;
      lease: bigint;
      pollInterval: bigint;
    };
    statusArchive: { after: bigint; retention: bigint; interval: bigint };
  };
}

/**
 * Reads and validates every variable; collects all problems before failing so an operator fixes them
 * in one go. Throws ConfigError naming each variable, its value (unless secret) and what was expected.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, options: LoadOptions = {}): Config {
  const problems: string[] = [];

  function read<N extends VariableName>(name: N): Parsed<N> | undefined {
    const spec = VARIABLES[name] as VariableSpec<Parsed<N>>;
    const raw = env[name] ?? spec.default;
    if (raw === undefined || (raw === '' && spec.default === undefined)) return undefined;
    try {
      return spec.parse(raw);
    } catch {
      const shown = spec.secret ? '(value hidden)' : JSON.stringify(raw);
      const problem = `${name}=${shown} is not valid: expected ${spec.expected}`;
      // Some variables are read for two services (SEAL_URL, OUTBOUND_SMTP_URL): report them once.
      if (!problems.includes(problem)) problems.push(problem);
      return undefined;
    }
  }
  // Defaults always parse, so `required` only guards variables the running mode needs.
  function required<N extends VariableName>(name: N, why: string): Parsed<N> {
    const value = read(name);
    if (value === undefined && !problems.some((p) => p.startsWith(`${name}=`))) {
      problems.push(`${name} is not set: ${why}`);
    }
    return value as Parsed<N>;
  }

  const nodeEnv = read('NODE_ENV') ?? 'development';
  const production = nodeEnv === 'production';
  const host = read('HOST')!;
  const authPort = read('AUTH_PORT')!;
  // The services of one `start all` find each other where they listen: another port, another host.
  const sealUrl = read('SEAL_URL') ?? localUrl(host, read('SEAL_PORT')!);
  const exchangeUrl = read('EXCHANGE_URL') ?? localUrl(host, read('EXCHANGE_PORT')!);

  const generatedTokens: Config['generatedTokens'] = [];
  function token(name: 'ADMIN_TOKEN' | 'SERVICE_TOKEN'): string {
    if (production) return required(name, 'production needs explicit tokens');
    const value = read(name);
    if (value !== undefined) return value;
    generatedTokens.push(name);
    return randomBytes(24).toString('base64url');
  }

  const tlsOn = read('INBOUND_SMTP_TLS') ?? false;
  const inboundSmtpTls = tlsOn
    ? {
        certPath: required('INBOUND_SMTP_TLS_PUBLIC_KEY', 'INBOUND_SMTP_TLS=true needs the certificate file'),
        keyPath: required('INBOUND_SMTP_TLS_PRIVATE_KEY', 'INBOUND_SMTP_TLS=true needs the private key file'),
      }
    : undefined;

  const clamdHost = read('CLAMD_HOST');
  const attachmentsRequireScan = read('ATTACHMENTS_REQUIRE_SCAN') ?? false;
  const dkim = dkimSettings(read('DKIM_DOMAIN'), read('DKIM_SELECTOR'), read('DKIM_PRIVATE_KEY_FILE'), problems);
  if (attachmentsRequireScan && !clamdHost) problems.push('ATTACHMENTS_REQUIRE_SCAN=true needs CLAMD_HOST (there is no scanner to require)');

  const clusterHost = read('IPFS_CLUSTER_HOST');
  const clusterUser = read('IPFS_CLUSTER_USER') || undefined;
  const clusterPass = read('IPFS_CLUSTER_PASS') || undefined;
  if (clusterHost && Boolean(clusterUser) !== Boolean(clusterPass)) {
    problems.push('IPFS_CLUSTER_USER and IPFS_CLUSTER_PASS must be set together (Basic auth needs both)');
  }

  const authPublicUrl = read('AUTH_PUBLIC_URL');
  // auth sets its cookies from it; seal writes it into every reader link it hands out.
  if (production && options.services?.some((service) => service === 'auth' || service === 'seal')) {
    const problem = productionPublicUrlProblem(env.AUTH_PUBLIC_URL, authPublicUrl);
    if (problem) problems.push(problem);
  }

  const config: Config = {
    env: nodeEnv,
    production,
    logLevel: read('LOG_LEVEL')!,
    logFormat: read('LOG_FORMAT')! as Config['logFormat'],
    host,
    dataDir: read('SEALPOST_DATA_DIR')!,
    databaseUrl: read('DATABASE_URL'),
    databasePoolSize: read('DATABASE_POOL_SIZE')!,
    s3: {
      endpoint: read('S3_ENDPOINT'),
      bucket: read('S3_BUCKET'),
      region: read('S3_REGION')!,
      accessKeyId: read('S3_ACCESS_KEY_ID') || undefined,
      secretAccessKey: read('S3_SECRET_ACCESS_KEY') || undefined,
      forcePathStyle: read('S3_FORCE_PATH_STYLE')!,
    },
    adminToken: token('ADMIN_TOKEN'),
    serviceToken: token('SERVICE_TOKEN'),
    generatedTokens,
    shutdownTimeout: read('SHUTDOWN_TIMEOUT')!,
    http: { idleTimeout: read('HTTP_IDLE_TIMEOUT')!, maxConnections: read('HTTP_MAX_CONNECTIONS')! },
    auth: {
      port: authPort,
      publicUrl: authPublicUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${authPort}`,
      exchangeUrl,
      smsCodeExpiration: read('SMS_CODE_EXPIRATION')!,
      attachmentsRetentionPeriod: read('ATTACHMENTS_RETENTION_PERIOD')!,
      expiredAttachmentsWatcherInterval: read('EXPIRED_ATTACHMENTS_WATCHER_INTERVAL')!,
      attachments: {
        maxSize: read('ATTACHMENT_MAX_SIZE')!,
        replyMaxTotalSize: read('REPLY_MAX_TOTAL_SIZE')!,
        forbiddenTypes: read('ATTACHMENT_FORBIDDEN_TYPES')!,
        clamd: clamdHost ? { host: clamdHost, port: read('CLAMD_PORT')!, timeout: read('CLAMD_TIMEOUT')! } : undefined,
        requireScan: attachmentsRequireScan,
      },
      sealUrl,
      outboundSmtpUrl: read('OUTBOUND_SMTP_URL'),
      mailFrom: read('AUTH_MAIL_FROM')!,
      dkim,
      replyFrom: read('REPLY_FROM') ?? read('AUTH_MAIL_FROM')!,
      replyFromRecipient: read('REPLY_FROM_RECIPIENT')!,
      defaultLanguage: read('NOTIFY_DEFAULT_LANGUAGE')!,
      secret: read('AUTH_SECRET'),
      trustProxyHops: read('AUTH_TRUST_PROXY')!,
      sms: {
        provider: read('SMS_PROVIDER') ?? (production ? undefined : 'log'),
        url: read('SMS_PROVIDER_URL'),
        user: read('SMS_PROVIDER_USER') || undefined,
        password: read('SMS_PROVIDER_PASSWORD') || undefined,
        sender: read('SMS_SENDER')!,
        text: read('SMS_TEXT')!,
        timeout: read('SMS_PROVIDER_TIMEOUT')!,
      },
      limits: {
        numberInterval: read('SMS_LIMIT_NUMBER_INTERVAL')!,
        numberHourly: read('SMS_LIMIT_NUMBER_HOURLY')!,
        ipHourly: read('SMS_LIMIT_IP_HOURLY')!,
      },
      codeMaxAttempts: read('CODE_MAX_ATTEMPTS')!,
      session: {
        rememberMeMaxAge: read('SESSION_REMEMBER_ME_MAX_AGE')!,
        idleTimeout: read('SESSION_IDLE_TIMEOUT')!,
        absoluteTimeout: read('SESSION_ABSOLUTE_TIMEOUT')!,
        cleanupInterval: read('SESSION_CLEANUP_INTERVAL')!,
      },
    },
    seal: {
      port: read('SEAL_PORT')!,
      envCluster: clusterHost
        ? {
            host: clusterHost,
            port: read('IPFS_CLUSTER_PORT')!,
            ...(clusterUser ? { user: clusterUser } : {}),
            ...(clusterPass ? { pass: clusterPass } : {}),
            secure: read('IPFS_CLUSTER_SECURE')!,
          }
        : undefined,
      ipfsProxyPort: read('IPFS_PROXY_PORT')!,
      masterKey: read('SEAL_MASTER_KEY'),
      clusterCaFile: read('IPFS_CLUSTER_CA_FILE'),
      maxMessageSize: read('SEAL_MAX_MESSAGE_SIZE')!,
      repinInterval: read('SEAL_REPIN_INTERVAL')!,
      pinCheckInterval: read('SEAL_PIN_CHECK_INTERVAL')!,
      pinDeadline: read('SEAL_PIN_DEADLINE')!,
    },
    exchange: {
      port: read('EXCHANGE_PORT')!,
      smtpPort: read('INBOUND_SMTP_PORT')!,
      sealUrl,
      inboundSmtpTls,
      inboundSmtpAllowedNetworks: read('INBOUND_SMTP_ALLOWED_NETWORKS')!,
      inboundSmtpUsersFile: read('INBOUND_SMTP_USERS_FILE'),
      inboundSmtpSenderDomains: read('INBOUND_SMTP_SENDER_DOMAINS'),
      smtpMaxMessageSize: read('SMTP_MAX_MESSAGE_SIZE')!,
      smtpMaxRecipients: read('SMTP_MAX_RECIPIENTS')!,
      smtpMaxConnections: read('SMTP_MAX_CONNECTIONS')!,
      smtpHostname: read('SMTP_HOSTNAME')!,
      smtpReverseLookup: read('SMTP_REVERSE_LOOKUP')!,
      outboundSmtpUrl: read('OUTBOUND_SMTP_URL'),
      notifyFrom: read('NOTIFY_FROM')!,
      notifyDefaultLanguage: read('NOTIFY_DEFAULT_LANGUAGE')!,
      dkim,
      delivery: {
        enabled: read('DELIVERY_ENABLED')!,
        concurrency: read('DELIVERY_CONCURRENCY')!,
        maxRetries: read('DELIVERY_MAX_RETRIES')!,
        retryBase: read('DELIVERY_RETRY_BASE')!,
        retryMax: read('DELIVERY_RETRY_MAX')!,
        lease: read('DELIVERY_LEASE')!,
        pollInterval: read('DELIVERY_POLL_INTERVAL')!,
      },
      statusArchive: {
        after: read('STATUS_ARCHIVE_AFTER')!,
        retention: read('STATUS_ARCHIVE_RETENTION')!,
        interval: read('STATUS_ARCHIVE_INTERVAL')!,
      },
    },
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Where a service on this host listening on HOST:port is reached: a wildcard address is reached on loopback. */
function localUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE go together: a partial set is a mistake, not "off". */
function dkimSettings(domain: string | undefined, selector: string | undefined, keyFile: string | undefined, problems: string[]): DkimSettings | undefined {
  if (domain === undefined && selector === undefined && keyFile === undefined) return undefined;
  if (domain === undefined || selector === undefined || keyFile === undefined) {
    const missing = [domain === undefined && 'DKIM_DOMAIN', selector === undefined && 'DKIM_SELECTOR', keyFile === undefined && 'DKIM_PRIVATE_KEY_FILE'].filter(Boolean);
    problems.push(`DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE must be set together: ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing`);
    return undefined;
  }
  return { domain, selector, keyFile };
}

/** Every variable as data (`sealpost config --json`): name, the services that read it, meaning, default. */
export function variablesJson(): Array<{ name: string; component: string; meaning: string; default: string | null; secret: boolean }> {
  return Object.values(VARIABLES).map((spec) => ({
    name: spec.name,
    component: spec.component,
    meaning: spec.meaning,
    default: spec.default ?? null,
    secret: Boolean((spec as { secret?: boolean }).secret),
  }));
}

/** The variable table of docs/configuration.md, generated from VARIABLES so the documentation cannot drift. */
export function variablesMarkdown(): string {
  const rows = Object.values(VARIABLES).map(
    (spec) =>
      `| \`${spec.name}\` | ${spec.component} | ${spec.meaning} | ${spec.default !== undefined ? `\`${spec.default}\`` : 'unset'} |`,
  );
  return ['| Variable | Component | Meaning | Default |', '|---|---|---|---|', ...rows].join('\n');
}

/** docs/configuration.md, whole: written by `npm run docs`, checked by a test. */
export function configurationDoc(): string {
  return [
    '# Configuration',
    '',
    '<!-- Generated from src/kernel/config.ts by `npm run docs`; edit there, not here. -->',
    '',
    'Everything is an environment variable, read once at start. A bad value stops the process with a message',
    'that names the variable, the value (never for secrets) and what was expected. Durations use Go\'s syntax',
    'exactly (`15m`, `1h30m`, `1.5h`, `336h`; units `ns us µs ms s m h`); booleans Go\'s (`true`/`false`,',
    '`1`/`0`, `t`/`f`). Component: A auth, B seal, C exchange. `sealpost config --markdown` prints this table,',
    '`sealpost config --json` the same as data.',
    '',
    variablesMarkdown(),
    '',
  ].join('\n');
}

/** Durations in Config are nanoseconds; this shows them the way the operator wrote them. */
export const showDuration = formatDuration;
