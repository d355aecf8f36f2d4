import {
  AUTH_PORT,
  AUTH_PUBLIC_URL,
  authPublicUrl,
  EXCHANGE_PORT,
  EXCHANGE_URL,
  INBOUND_SMTP_SENDER_DOMAINS,
  SEAL_MAX_MESSAGE_SIZE,
  SEAL_PORT,
  SEAL_URL,
  serviceUrl,
} from '../contracts/variables.ts';
import type { ServiceConfigInput } from '../kernel/config.ts';
import {
  DKIM_VARIABLES,
  dkimSettings,
  NOTIFY_DEFAULT_LANGUAGE,
  OUTBOUND_OUTBOX,
  OUTBOUND_SMTP_URL,
  outboxOnPurpose,
} from '../kernel/mail-config.ts';
import { weakSecretProblem } from '../kernel/secret-strength.ts';
import {
  boolean,
  byteSize,
  httpUrl,
  integer,
  nonEmpty,
  nonNegativeDuration,
  oneOf,
  parseBoolean,
  parseMailbox,
  port,
  positiveDuration,
  text,
  ValueError,
} from '../kernel/parsers.ts';
import { defineVariables, loadVariables } from '../kernel/variables.ts';
import { SMS_PROVIDERS } from './sms/provider.ts';

/** Executables and scripts (Windows, Unix, Java, Android, installers, shortcuts), as extensions and MIME types. */
const FORBIDDEN_TYPES_DEFAULT = [
  'exe,dll,msi,msp,mst,bat,cmd,com,scr,pif,cpl,hta,js,jse,mjs,vbs,vbe,vb,wsf,wsh,wsc,ps1,psm1,psd1,msc,reg,inf',
  'lnk,scf,gadget,appx,msix',
  'jar,class,sh,bash,csh,ksh,zsh,command,elf,macho,apk,dex,deb,rpm',
  'application/x-msdownload,application/x-dosexec,application/x-msi,application/x-ms-shortcut',
  'application/x-elf,application/x-mach-binary',
  'application/java-archive,application/java-vm,application/x-sh,text/x-shellscript',
  'application/vnd.android.package-archive',
  'application/vnd.debian.binary-package,application/x-rpm',
].join(',');

/** The auth service's variables (docs/configuration.md, component A), in the order the reference lists them. */
export const AUTH_VARIABLES = defineVariables({
  port: AUTH_PORT,
  publicUrl: AUTH_PUBLIC_URL,
  smsCodeExpiration: {
    name: 'SMS_CODE_EXPIRATION',
    meaning: 'lifetime of an SMS verification code',
    default: '15m',
    ...positiveDuration,
  },
  attachmentsRetentionPeriod: {
    name: 'ATTACHMENTS_RETENTION_PERIOD',
    meaning: 'minimum time unsent attachment files are kept before they may be deleted',
    default: '336h',
    ...positiveDuration,
  },
  expiredAttachmentsWatcherInterval: {
    name: 'EXPIRED_ATTACHMENTS_WATCHER_INTERVAL',
    meaning: 'interval of the process that deletes expired attachments',
    default: '1h',
    ...positiveDuration,
  },
  attachments: {
    maxSize: {
      name: 'ATTACHMENT_MAX_SIZE',
      meaning: 'largest reply attachment (`file_too_large` above it; the upload is cut off there)',
      default: '17MiB',
      ...byteSize,
    },
    replyMaxTotalSize: {
      name: 'REPLY_MAX_TOTAL_SIZE',
      meaning:
        'all attachments of one reply together (`upload_limit_reached` above it); ' +
        "the exchange's SMTP_MAX_MESSAGE_SIZE must allow about 4/3 of it " +
        '(base64); the default fits the default 25MiB, the size most mailboxes take',
      default: '17MiB',
      ...byteSize,
    },
    forbiddenTypes: {
      name: 'ATTACHMENT_FORBIDDEN_TYPES',
      meaning:
        'attachment types refused with `forbidden_file_type`, comma-separated: ' +
        'file extensions (matched against the name and the type detected from the ' +
        'content) and MIME types (matched against the detected type); empty allows all',
      default: FORBIDDEN_TYPES_DEFAULT,
      parse: typeList,
      expected: 'a comma-separated list of extensions (exe) and MIME types (application/x-msdownload)',
    },
    clamd: {
      host: {
        name: 'CLAMD_HOST',
        meaning: 'ClamAV daemon (clamd) that scans every attachment over INSTREAM; scanning is on when set',
        ...nonEmpty('a host name or IP address'),
      },
      port: { name: 'CLAMD_PORT', meaning: "clamd's TCP port", default: '3310', ...port(1) },
      timeout: {
        name: 'CLAMD_TIMEOUT',
        meaning:
          'time limit for connecting to clamd and for its verdict once the file is sent ' +
          "(clamd's StreamMaxLength should be at least ATTACHMENT_MAX_SIZE)",
        default: '30s',
        ...positiveDuration,
      },
    },
    requireScan: {
      name: 'ATTACHMENTS_REQUIRE_SCAN',
      meaning:
        'refuse uploads (503) while clamd cannot scan them; false accepts them unscanned with a warning in the log',
      default: 'false',
      ...boolean,
    },
  },
  secret: {
    name: 'AUTH_SECRET',
    meaning:
      'secret from which the keys of code HMACs and CSRF tokens are derived; ' +
      'the same on every auth instance; required in production (no placeholder, not one character repeated), ' +
      'generated into the data folder otherwise',
    secret: true,
    parse: authSecret,
    expected: 'at least 32 characters (e.g. `openssl rand -hex 32`)',
  },
  trustProxyHops: {
    name: 'AUTH_TRUST_PROXY',
    meaning:
      'client IP (per-IP SMS limit) from X-Forwarded-For: false uses the connection address; ' +
      'true or a number N trusts that many proxy hops (the N-th address from the right)',
    default: 'false',
    parse: proxyHops,
    expected: 'a boolean or a number of proxy hops from 0 to 10',
  },
  mailFrom: {
    name: 'AUTH_MAIL_FROM',
    meaning: 'From address of sign-in codes sent by email',
    default: 'Sealpost <no-reply@localhost>',
    ...nonEmpty('an address, optionally with a display name'),
  },
  replyFrom: {
    name: 'REPLY_FROM',
    meaning:
      "From address and envelope sender of replies, in the organisation's domain " +
      'so that SPF and DKIM align (DMARC); the recipient shows in the display name ' +
      '("alice@example.com via <its display name>") and in Reply-To; default: AUTH_MAIL_FROM',
    parse: parseMailbox,
    expected: 'an address, optionally with a display name: Example Org <replies@example.org>',
  },
  subjectBeforeSignIn: {
    name: 'READER_SUBJECT_BEFORE_SIGN_IN',
    meaning:
      "true: the reader page shows the message's subject before sign-in (GET /v1/config), to anyone holding the " +
      'link; false shows only who sent it, as the notification does (a subject may be confidential)',
    default: 'false',
    ...boolean,
  },
  replyFromRecipient: {
    name: 'REPLY_FROM_RECIPIENT',
    meaning:
      "true: replies go out From the recipient's own address, also as envelope sender (for a relay that " +
      "delivers internally only); such replies fail DMARC wherever the recipient's domain publishes p=reject",
    default: 'false',
    ...boolean,
  },
  sms: {
    provider: {
      name: 'SMS_PROVIDER',
      meaning:
        'SMS provider: `http` (JSON {to, from, text} with Basic auth), `twilio` (Messages API) or `log` ' +
        '(prints the code; refused in production); default `log` outside production, required in production',
      ...oneOf(SMS_PROVIDERS),
    },
    url: {
      name: 'SMS_PROVIDER_URL',
      meaning: 'http: the URL codes are POSTed to; twilio: the API base URL (default https://api.twilio.com)',
      ...httpUrl,
    },
    user: {
      name: 'SMS_PROVIDER_USER',
      meaning: 'http: Basic auth user; twilio: the account SID',
      ...text('a user name or account SID'),
    },
    password: {
      name: 'SMS_PROVIDER_PASSWORD',
      meaning: 'http: Basic auth password; twilio: the auth token',
      secret: true,
      ...text('a password or auth token'),
    },
    sender: {
      name: 'SMS_SENDER',
      meaning: 'sender of the SMS (`from`; for twilio a number, or a messaging service SID starting with MG)',
      default: 'Sealpost',
      ...nonEmpty('a sender name or number'),
    },
    text: {
      name: 'SMS_TEXT',
      meaning: 'text of the code SMS; `{code}` is replaced by the code',
      default: 'Your Sealpost code is {code}',
      parse: smsText,
      expected: 'a text containing {code}',
    },
    timeout: {
      name: 'SMS_PROVIDER_TIMEOUT',
      meaning:
        'time limit of one call to the SMS provider ' +
        '(or the mail relay for email codes); past it the request fails with 502',
      default: '10s',
      ...positiveDuration,
    },
  },
  limits: {
    numberInterval: {
      name: 'SMS_LIMIT_NUMBER_INTERVAL',
      meaning: 'shortest time between two codes sent to the same mobile number (or email address); 0s turns it off',
      default: '60s',
      ...nonNegativeDuration,
    },
    numberHourly: {
      name: 'SMS_LIMIT_NUMBER_HOURLY',
      meaning: 'codes sent to the same mobile number (or email address) per hour',
      default: '5',
      ...integer(1, 100000),
    },
    ipHourly: {
      name: 'SMS_LIMIT_IP_HOURLY',
      meaning: 'codes requested from the same client IP (IPv6: the same /64) per hour',
      default: '20',
      ...integer(1, 100000),
    },
  },
  codeMaxAttempts: {
    name: 'CODE_MAX_ATTEMPTS',
    meaning: 'wrong tries after which a code is void (a resend keeps the count of the code it replaces)',
    default: '5',
    ...integer(1, 100),
  },
  session: {
    rememberMeMaxAge: {
      name: 'SESSION_REMEMBER_ME_MAX_AGE',
      meaning: "lifetime of a 'keep me signed in' session (the cookie's Max-Age)",
      default: '720h',
      ...positiveDuration,
    },
    idleTimeout: {
      name: 'SESSION_IDLE_TIMEOUT',
      meaning: 'a session without remember-me ends when unused this long',
      default: '1h',
      ...positiveDuration,
    },
    absoluteTimeout: {
      name: 'SESSION_ABSOLUTE_TIMEOUT',
      meaning: 'a session without remember-me ends this long after it started or signed in, however busy',
      default: '12h',
      ...positiveDuration,
    },
    cleanupInterval: {
      name: 'SESSION_CLEANUP_INTERVAL',
      meaning: 'how often expired sessions and old rate-limit records are deleted',
      default: '10m',
      ...positiveDuration,
    },
    cacheSize: {
      name: 'SESSION_CACHE_SIZE',
      meaning:
        'sessions each instance keeps in memory, so that a request with a known session does not ask PostgreSQL; ' +
        'changes reach every instance through LISTEN/NOTIFY (one more database connection); 0 turns the cache off',
      default: '10000',
      ...integer(0, 10_000_000),
    },
    cacheTtl: {
      name: 'SESSION_CACHE_TTL',
      meaning:
        'longest time a cached session is used before it is read again; changes are heard at once, ' +
        'so this bounds only what a lost notification could cost',
      default: '30s',
      ...positiveDuration,
    },
  },
  // Where the other services are, and what this service must agree with them on.
  sealUrl: SEAL_URL,
  sealPort: SEAL_PORT,
  sealMaxMessageSize: SEAL_MAX_MESSAGE_SIZE,
  exchangeUrl: EXCHANGE_URL,
  exchangePort: EXCHANGE_PORT,
  // The email codes go out like the exchange's mail: the same relay, DKIM key and default language.
  outboundSmtpUrl: OUTBOUND_SMTP_URL,
  outbox: OUTBOUND_OUTBOX,
  dkim: DKIM_VARIABLES,
  defaultLanguage: NOTIFY_DEFAULT_LANGUAGE,
  // The sender's page (/sent): who may sign in there, and what its sender is told by mail.
  senderDomains: INBOUND_SMTP_SENDER_DOMAINS,
  notifySenderOn: {
    name: 'NOTIFY_SENDER_ON',
    meaning:
      "mail the sender of a sealed message (DKIM-signed, in NOTIFY_DEFAULT_LANGUAGE, linking to the sender's " +
      "page `/sent`) at a recipient's first opening (`opened`), at each reply (`replied`), or both " +
      '(`opened,replied`); `none`: never',
    default: 'none',
    parse: senderNoticeEvents,
    expected: 'none, opened, replied or opened,replied',
  },
});

/** The auth service's configuration, durations in milliseconds; problems go to input.problems. */
export function loadAuthConfig(input: ServiceConfigInput) {
  const { problems, shared } = input;
  const { sealPort, exchangePort, ...values } = loadVariables(AUTH_VARIABLES, input.env, problems);
  const { clamd, ...attachments } = values.attachments;
  if (shared.production && values.secret !== undefined) {
    const problem = weakSecretProblem('AUTH_SECRET', values.secret);
    if (problem) problems.push(problem);
  }
  if (input.starting) outboxOnPurpose(values.outboundSmtpUrl, values.outbox, input);
  if (attachments.requireScan && !clamd.host)
    problems.push('ATTACHMENTS_REQUIRE_SCAN=true needs CLAMD_HOST (there is no scanner to require)');
  return {
    ...values,
    publicUrl: authPublicUrl(values.publicUrl, values.port, input),
    sealUrl: serviceUrl(values.sealUrl, sealPort, input),
    exchangeUrl: serviceUrl(values.exchangeUrl, exchangePort, input),
    /** Reply attachments: limits, forbidden types and the malware scanner (src/auth/attachments). */
    attachments: {
      ...attachments,
      /** Undefined when CLAMD_HOST is unset: no scanning. */
      clamd: clamd.host ? { host: clamd.host, port: clamd.port, timeout: clamd.timeout } : undefined,
    },
    /** DKIM_*: the email codes are signed too; undefined when not configured. */
    dkim: dkimSettings(values.dkim, problems),
    /** REPLY_FROM, or AUTH_MAIL_FROM when unset. */
    replyFrom: values.replyFrom ?? values.mailFrom,
    sms: {
      ...values.sms,
      /** Undefined in production when SMS_PROVIDER is unset (the auth service refuses to start). */
      provider: values.sms.provider ?? (shared.production ? undefined : ('log' as const)),
    },
  };
}

export type AuthConfig = ReturnType<typeof loadAuthConfig>;

/** HMAC keys are derived from it: shorter secrets are guessable offline from one stolen code hash. */
function authSecret(raw: string): string {
  if (raw.length < 32) throw new ValueError();
  return raw;
}

function typeList(raw: string): string[] {
  const entries = raw
    .split(',')
    .map((entry) => entry.trim().toLowerCase().replace(/^\./, ''))
    .filter(Boolean);
  if (entries.some((entry) => !/^[a-z0-9][a-z0-9+.-]*(\/[a-z0-9][a-z0-9!#$&^_.+-]*)?$/.test(entry)))
    throw new ValueError();
  return [...new Set(entries)];
}

function proxyHops(raw: string): number {
  if (/^\d+$/.test(raw.trim())) return integer(0, 10).parse(raw);
  return parseBoolean(raw) ? 1 : 0;
}

/** The recipients' doings a sender is told of by mail (NOTIFY_SENDER_ON). */
export type SenderNoticeEvent = 'opened' | 'replied';

function senderNoticeEvents(raw: string): SenderNoticeEvent[] {
  const entries = [...new Set(raw.split(',').map((entry) => entry.trim().toLowerCase()))].filter(Boolean);
  if (entries.length === 1 && entries[0] === 'none') return [];
  if (entries.length === 0 || entries.some((entry) => entry !== 'opened' && entry !== 'replied'))
    throw new ValueError();
  return entries as SenderNoticeEvent[];
}

function smsText(raw: string): string {
  if (!raw.includes('{code}')) throw new ValueError();
  return raw;
}
