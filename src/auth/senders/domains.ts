/**
 * Whether an address is of one of the organisation's domains (INBOUND_SMTP_SENDER_DOMAINS) or below one, as the
 * exchange decides it for SMTP senders; every address is, when the variable is unset.
 */
export function inSenderDomains(address: string, domains: readonly string[] | undefined): boolean {
  if (!domains) return true;
  const domain = address
    .slice(address.lastIndexOf('@') + 1)
    .toLowerCase()
    .replace(/\.$/, '');
  return domains.some((own) => domain === own || domain.endsWith(`.${own}`));
}
