import type { SMTPServerAddress } from 'smtp-server';
import { type SmtpReply, smtpReply } from './smtp-replies.ts';

/**
 * MAIL and RCPT parameters Sealpost advertises (RFC 5321 §4.1.1.11: others get 555 5.5.4): SIZE,
 * BODY (8BITMIME), SMTPUTF8, and the AUTH= parameter (RFC 4954) where AUTH is offered (after STARTTLS,
 * with accounts). DSN is not offered, so RET, ENVID, NOTIFY and ORCPT are refused; nor is REQUIRETLS:
 * refusing it (555) is the RFC 8689 answer of a server that cannot promise TLS on every later hop, and it
 * keeps a message that demands that promise from being taken and then relayed in clear
 * (docs/decisions.md, "Only what EHLO advertises is taken").
 */
const MAIL_PARAMETERS = new Set(['SIZE', 'BODY', 'SMTPUTF8']);
const MAIL_PARAMETERS_AUTH = new Set([...MAIL_PARAMETERS, 'AUTH']);
export const RCPT_PARAMETERS = new Set<string>();

/** The MAIL parameters of a connection: `authOffered` when its EHLO answer lists AUTH. */
export function mailParameters(authOffered: boolean): Set<string> {
  return authOffered ? MAIL_PARAMETERS_AUTH : MAIL_PARAMETERS;
}

export function unadvertised(address: Pick<SMTPServerAddress, 'args'>, allowed: Set<string>): SmtpReply | undefined {
  const unknown = Object.keys(address.args || {}).find((name) => !allowed.has(name.toUpperCase()));
  return unknown === undefined ? undefined : smtpReply(555, `5.5.4 Parameter ${unknown} is not supported here`);
}

export function hasParameter(address: SMTPServerAddress, name: string): boolean {
  return Object.entries(address.args || {}).some(([key, value]) => key.toUpperCase() === name && value === true);
}

/** RFC 6531 §3.4: a non-ASCII address needs the SMTPUTF8 parameter on MAIL FROM. */
export function utf8Refusal(address: string, smtputf8: boolean): SmtpReply | undefined {
  if (smtputf8 || !/[^\x00-\x7f]/.test(address)) return undefined;
  return smtpReply(553, `5.6.7 The address <${address}> needs SMTPUTF8 (MAIL FROM:<...> SMTPUTF8)`);
}
