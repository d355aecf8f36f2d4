import type { DkimSettings } from './dkim.ts';
import { LANGUAGES } from './languages.ts';
import { boolean, nonEmpty, oneOf, parseDomainName, url, ValueError, type ValueKind } from './parsers.ts';
import { defineVariable, defineVariables, type Values } from './variables.ts';

/**
 * The mail Sealpost writes itself (the exchange's notifications and bounces, the auth service's email
 * codes) goes out the same way from either service: one relay, one DKIM key, one default language.
 * The services that write mail list these in their own declarations, so the reference shows who reads them.
 */

export const OUTBOUND_SMTP_URL = defineVariable({
  name: 'OUTBOUND_SMTP_URL',
  meaning:
    'relay for outbound mail, also used by A for email codes (smtp:// or smtps://, ' +
    'credentials in the URL); unset: `.eml` files in `$SEALPOST_DATA_DIR/outbox`',
  secret: true,
  ...url(['smtp:', 'smtps:'], 'an smtp:// or smtps:// URL'),
});

export const OUTBOUND_OUTBOX = defineVariable({
  name: 'OUTBOUND_OUTBOX',
  meaning:
    'true: without OUTBOUND_SMTP_URL, outbound mail is written to `$SEALPOST_DATA_DIR/outbox` on purpose; ' +
    'production refuses to start with neither (notifications and email codes would reach no one)',
  default: 'false',
  ...boolean,
});

/**
 * Production with no relay would write every notification and email code to a folder no one reads,
 * and say so only at info level: it starts only when the operator named the outbox (OUTBOUND_OUTBOX).
 */
export function outboxOnPurpose(
  url: string | undefined,
  outbox: boolean,
  input: { shared: { production: boolean }; problems: string[] },
): void {
  if (!input.shared.production || url !== undefined || outbox) return;
  input.problems.push(
    'OUTBOUND_SMTP_URL is not set: production sends notifications and email codes through a relay ' +
      '(smtp://user:password@relay.example.org:587); to write them to the outbox folder instead, ' +
      'set OUTBOUND_OUTBOX=true',
  );
}

export const NOTIFY_DEFAULT_LANGUAGE = defineVariable({
  name: 'NOTIFY_DEFAULT_LANGUAGE',
  meaning:
    "language of notifications, and of A's email codes, for recipients the sender gave none " +
    '(JSON `recipients[].language`, header `X-Sealpost-Language: <email>=<language>`)',
  default: 'en',
  ...oneOf(LANGUAGES),
  expected: LANGUAGES.join(', '),
});

/** A DKIM selector: one or more DNS labels (RFC 6376 §3.1). */
const selector: ValueKind<string> = {
  parse: (raw) => {
    if (
      !/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(
        raw.trim(),
      )
    )
      throw new ValueError();
    return raw.trim();
  },
  expected: 'a DNS label such as sealpost or s2026',
};

/** DKIM_*, as a group: dkimSettings turns the three values into settings, or nothing. */
export const DKIM_VARIABLES = defineVariables({
  domain: {
    name: 'DKIM_DOMAIN',
    meaning:
      'domain that signs (d=) the mail Sealpost writes — notifications, bounces, ' +
      "A's email codes — and relayed mail whose From is in it or a subdomain (replies, " +
      'when their From address is there); set with DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE; unset: nothing is signed',
    parse: parseDomainName,
    expected: 'a domain name such as example.org',
  },
  selector: {
    name: 'DKIM_SELECTOR',
    meaning: 'DKIM selector (s=): the public key is published at <selector>._domainkey.<DKIM_DOMAIN>',
    ...selector,
  },
  keyFile: {
    name: 'DKIM_PRIVATE_KEY_FILE',
    meaning:
      'PEM file of the DKIM private key, RSA (rsa-sha256, 1024 bits at least) or Ed25519 ' +
      '(ed25519-sha256); `sealpost dkim-key generate` writes one and prints the DNS record',
    ...nonEmpty('a file path'),
  },
});

/** DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE go together: a partial set is a mistake, not "off". */
export function dkimSettings(values: Values<typeof DKIM_VARIABLES>, problems: string[]): DkimSettings | undefined {
  const { domain, selector, keyFile } = values;
  if (domain === undefined && selector === undefined && keyFile === undefined) return undefined;
  if (domain === undefined || selector === undefined || keyFile === undefined) {
    const missing = [
      domain === undefined && 'DKIM_DOMAIN',
      selector === undefined && 'DKIM_SELECTOR',
      keyFile === undefined && 'DKIM_PRIVATE_KEY_FILE',
    ].filter(Boolean);
    problems.push(
      'DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE must be set ' +
        `together: ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing`,
    );
    return undefined;
  }
  return { domain, selector, keyFile };
}
