import addressparser from 'nodemailer/lib/addressparser';
import { EXCHANGE_PORT, INBOUND_SMTP_SENDER_DOMAINS, SEAL_PORT, SEAL_URL, serviceUrl } from '../contracts/variables.ts';
import type { ServiceConfigInput } from '../kernel/config.ts';
import {
  DKIM_VARIABLES,
  dkimSettings,
  NOTIFY_DEFAULT_LANGUAGE,
  OUTBOUND_OUTBOX,
  OUTBOUND_SMTP_URL,
  outboxOnPurpose,
} from '../kernel/mail-config.ts';
import {
  boolean,
  byteSize,
  integer,
  nonEmpty,
  parseCidrList,
  nonNegativeDuration,
  perPeriod,
  port,
  positiveDuration,
  ValueError,
} from '../kernel/parsers.ts';
import { defineVariables, loadVariables, required } from '../kernel/variables.ts';

/** The exchange's variables (docs/configuration.md, component C), in the order the reference lists them. */
export const EXCHANGE_VARIABLES = defineVariables({
  port: EXCHANGE_PORT,
  smtpPort: { name: 'INBOUND_SMTP_PORT', meaning: 'port of the inbound SMTP server', default: '2525', ...port() },
  inboundSmtpTls: {
    enabled: {
      name: 'INBOUND_SMTP_TLS',
      meaning: 'enables TLS (STARTTLS) on the inbound SMTP server',
      default: 'false',
      ...boolean,
    },
    certPath: {
      name: 'INBOUND_SMTP_TLS_PUBLIC_KEY',
      meaning: 'path to a file holding the server certificate (PEM)',
      ...nonEmpty('a file path'),
    },
    keyPath: {
      name: 'INBOUND_SMTP_TLS_PRIVATE_KEY',
      meaning: 'path to a file holding the server private key (PEM)',
      ...nonEmpty('a file path'),
    },
  },
  inboundSmtpAllowedNetworks: {
    name: 'INBOUND_SMTP_ALLOWED_NETWORKS',
    meaning:
      'clients in these networks may submit mail over SMTP without authenticating ' +
      "(Postfix's mynetworks); every other client must AUTH after STARTTLS",
    default: '127.0.0.0/8,::1/128',
    parse: parseCidrList,
    expected: 'comma-separated IPv4/IPv6 networks in CIDR notation, e.g. 127.0.0.0/8,10.1.0.0/16,::1/128',
  },
  inboundSmtpUsersFile: {
    name: 'INBOUND_SMTP_USERS_FILE',
    meaning:
      'htpasswd file of the SMTP AUTH accounts, bcrypt entries only (`sealpost smtp-user add NAME` ' +
      'or `htpasswd -B` writes them), read at start; unset: no AUTH, only the allowed networks submit',
    ...nonEmpty('a file path'),
  },
  inboundSmtpSenderDomains: INBOUND_SMTP_SENDER_DOMAINS,
  smtpMaxMessageSize: {
    name: 'SMTP_MAX_MESSAGE_SIZE',
    meaning: 'largest message accepted over SMTP and JSON (advertised in EHLO; 552 above it)',
    default: '25MiB',
    ...byteSize,
  },
  smtpMaxRecipients: {
    name: 'SMTP_MAX_RECIPIENTS',
    meaning: 'recipients per message (452 above it)',
    default: '100',
    ...integer(1, 100000),
  },
  smtpMaxConnections: {
    name: 'SMTP_MAX_CONNECTIONS',
    meaning: 'concurrent inbound SMTP connections, all clients together (421 4.3.2 above it)',
    default: '1000',
    ...integer(1, 1000000),
  },
  inboundSmtpClientConnections: {
    name: 'INBOUND_SMTP_CLIENT_CONNECTIONS',
    meaning:
      'simultaneous SMTP connections from one client address (IPv6: one /64) outside ' +
      "INBOUND_SMTP_ALLOWED_NETWORKS (421 4.7.0 above it; Postfix's smtpd_client_connection_count_limit); " +
      '0 turns the limit off',
    default: '50',
    ...integer(0, 1000000),
  },
  inboundSmtpClientRate: {
    name: 'INBOUND_SMTP_CLIENT_RATE',
    meaning:
      'new SMTP connections from one client address (IPv6: one /64) outside INBOUND_SMTP_ALLOWED_NETWORKS ' +
      "per period, written COUNT/PERIOD, refused or not (421 4.7.0 above it; Postfix's " +
      'smtpd_client_connection_rate_limit); 0 turns the limit off',
    default: '600/1m',
    ...perPeriod(integer(1, 1000000), 'COUNT/PERIOD, a count per duration such as 600/1m or 100/10s, or 0'),
  },
  inboundSmtpMinDataRate: {
    name: 'INBOUND_SMTP_MIN_DATA_RATE',
    meaning:
      'least a client must send of a message during DATA in each period, written SIZE/PERIOD, the first ' +
      'period being its grace; a slower client is cut with 421 4.4.2 and nothing of the message is kept ' +
      '(any client); 0 turns it off',
    default: '8KiB/30s',
    ...perPeriod(byteSize, 'SIZE/PERIOD, a byte size per duration such as 8KiB/30s or 1MiB/1m, or 0'),
  },
  smtpHostname: {
    name: 'SMTP_HOSTNAME',
    meaning: 'name in the SMTP greeting, the EHLO to the relay, Received headers and bounces',
    default: 'localhost',
    ...nonEmpty('a host name'),
  },
  smtpReverseLookup: {
    name: 'SMTP_REVERSE_LOOKUP',
    meaning: "look up the client's reverse DNS name for the Received header",
    default: 'false',
    ...boolean,
  },
  smtpRuleCacheTtl: {
    name: 'SMTP_RULE_CACHE_TTL',
    meaning:
      'how long MAIL FROM answers from the delivery rules it last read instead of asking PostgreSQL; a rule ' +
      "deleted through another instance may take a message's body for this long, refused with 451 after " +
      'DATA; 0s asks at every MAIL FROM',
    default: '1s',
    ...nonNegativeDuration,
  },
  outboundSmtpUrl: OUTBOUND_SMTP_URL,
  outbox: OUTBOUND_OUTBOX,
  notifyFrom: {
    name: 'NOTIFY_FROM',
    meaning: 'From address of reader-link notifications and bounces',
    default: 'Sealpost <no-reply@localhost>',
    ...nonEmpty('an address, optionally with a display name'),
  },
  bounceNoticeRecipient: {
    name: 'BOUNCE_NOTICE_RECIPIENT',
    meaning:
      "where a bounce that cannot be delivered goes, as a report from `<>` (Postfix's 2bounce_notice_recipient); " +
      'a notice that fails too is only logged; unset: `postmaster@` the domain of NOTIFY_FROM (RFC 5321 §4.5.1: ' +
      'every domain has a postmaster)',
    parse: parseEnvelopeAddress,
    expected: 'an email address such as postmaster@example.org',
  },
  dkim: DKIM_VARIABLES,
  notifyDefaultLanguage: NOTIFY_DEFAULT_LANGUAGE,
  delivery: {
    concurrency: {
      name: 'DELIVERY_CONCURRENCY',
      meaning: 'messages delivered at once by one engine instance (also the most relay connections it opens)',
      default: '32',
      ...integer(1, 1000),
    },
    maxRetries: {
      name: 'DELIVERY_MAX_RETRIES',
      meaning: 'retries after the first attempt before a message fails and bounces',
      default: '10',
      ...integer(0, 1000),
    },
    retryBase: {
      name: 'DELIVERY_RETRY_BASE',
      meaning: 'delay before the first retry; doubles each time, with jitter',
      default: '1m',
      ...positiveDuration,
    },
    retryMax: {
      name: 'DELIVERY_RETRY_MAX',
      meaning: 'longest delay between two retries',
      default: '1h',
      ...positiveDuration,
    },
    lease: {
      name: 'DELIVERY_LEASE',
      meaning: "how long a worker owns a message; a crashed worker's message is taken again after it",
      default: '5m',
      ...positiveDuration,
    },
    enabled: {
      name: 'DELIVERY_ENABLED',
      meaning:
        'false: this instance takes mail (SMTP, JSON) but delivers none, leaving it to the instances ' +
        'on the same database that do (an intake-only instance, or delivery held for maintenance)',
      default: 'true',
      ...boolean,
    },
    payloadCache: {
      name: 'DELIVERY_PAYLOAD_CACHE',
      meaning:
        'memory for the payloads (each up to 256 KiB) of messages this instance accepted, ' +
        'so that it delivers them without reading them back from the object store; 0 turns it off',
      default: '32MiB',
      parse: (raw: string) => (raw.trim() === '0' ? 0 : byteSize.parse(raw)),
      expected: 'a byte size such as 33554432, 512KiB or 32MiB, or 0',
    },
    pollInterval: {
      name: 'DELIVERY_POLL_INTERVAL',
      meaning:
        'how often idle workers look for due messages (retries, ' +
        'and mail taken by other instances); mail this instance takes is claimed at once',
      default: '1s',
      ...positiveDuration,
    },
  },
  statusArchive: {
    after: {
      name: 'STATUS_ARCHIVE_AFTER',
      meaning: 'age at which status history rows move to message_status_archive',
      default: '720h',
      ...positiveDuration,
    },
    retention: {
      name: 'STATUS_ARCHIVE_RETENTION',
      meaning: 'age at which archived status rows are deleted (10 years)',
      default: '87600h',
      ...positiveDuration,
    },
    interval: {
      name: 'STATUS_ARCHIVE_INTERVAL',
      meaning: 'how often the archive job runs',
      default: '1h',
      ...positiveDuration,
    },
  },
  signInRequireSms: {
    name: 'SIGN_IN_REQUIRE_SMS',
    meaning:
      'refuse at intake (SMTP 550 5.7.1, JSON 400 mobile_required, naming them) a message to be sealed for a ' +
      'recipient with no mobile number from any source (the header, a number the recipient confirmed, the contacts ' +
      'directory), so that nothing is sealed that an email code alone would open; the seal service is asked once ' +
      'per message, and while it cannot answer the message is refused for now (451, 503)',
    default: 'false',
    ...boolean,
  },
  // Where the seal strategy seals.
  sealUrl: SEAL_URL,
  sealPort: SEAL_PORT,
});

/** The exchange's configuration, durations in milliseconds; problems go to input.problems. */
export function loadExchangeConfig(input: ServiceConfigInput) {
  const { problems } = input;
  const { sealPort, inboundSmtpTls: tls, ...values } = loadVariables(EXCHANGE_VARIABLES, input.env, problems);
  const { certPath, keyPath } = EXCHANGE_VARIABLES.inboundSmtpTls;
  if (input.starting) outboxOnPurpose(values.outboundSmtpUrl, values.outbox, input);
  return {
    ...values,
    sealUrl: serviceUrl(values.sealUrl, sealPort, input),
    /** INBOUND_SMTP_TLS: the certificate and key files, or undefined when off. */
    inboundSmtpTls: tls.enabled
      ? {
          certPath: required(certPath, tls.certPath, 'INBOUND_SMTP_TLS=true needs the certificate file', problems),
          keyPath: required(keyPath, tls.keyPath, 'INBOUND_SMTP_TLS=true needs the private key file', problems),
        }
      : undefined,
    /** DKIM_*: undefined when not configured (nothing signed). */
    dkim: dkimSettings(values.dkim, problems),
    bounceNoticeRecipient: values.bounceNoticeRecipient ?? `postmaster@${domainOf(values.notifyFrom)}`,
  };
}

/** A bare address, for an envelope (no display name, no angle brackets). */
function parseEnvelopeAddress(raw: string): string {
  const address = raw.trim();
  if (!/^[^@\s<>"]+@[^@\s<>]+$/.test(address)) throw new ValueError();
  return address;
}

/** The domain of NOTIFY_FROM's address (`Sealpost <no-reply@example.org>`: example.org). */
function domainOf(mailbox: string): string {
  const [first] = addressparser(mailbox, { flatten: true });
  const address = first && 'address' in first && first.address ? first.address : mailbox.trim();
  return address.slice(address.lastIndexOf('@') + 1) || 'localhost';
}

export type ExchangeConfig = ReturnType<typeof loadExchangeConfig>;
