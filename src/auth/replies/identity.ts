import addressparser from 'nodemailer/lib/addressparser';

/** Who a reply says it is from, and where answers and bounces go. */
export interface ReplyIdentity {
  /** The From header's mailbox. */
  from: { name: string; address: string };
  /** Reply-To: the recipient, when From is the organisation's address. */
  replyTo: { name: string; address: string } | undefined;
  /** MAIL FROM at the relay (what a reply rule's params.sender matches). */
  envelopeFrom: string;
}

export interface ReplyFromSettings {
  /** REPLY_FROM (or AUTH_MAIL_FROM): `Example Org <replies@example.org>`. */
  replyFrom: string;
  /** REPLY_FROM_RECIPIENT: the recipient's own address in From and MAIL FROM. */
  fromRecipient: boolean;
}

/**
 * The way mailing lists rewrite From (RFC 7960 §3.2.3): a reply goes out From the organisation's
 * address, so that SPF (MAIL FROM) and DKIM (DKIM_DOMAIN) align with the domain in From and DMARC
 * passes wherever the recipient's own domain publishes p=reject. The recipient stays visible in the
 * display name ("Alice Example (alice@example.com) via Example Org") and is the Reply-To, so an answer
 * reaches them. Bounces go to the organisation's address, which is also what reply rules match.
 */
export function replyIdentity(recipient: { email: string; name?: string }, settings: ReplyFromSettings): ReplyIdentity {
  const name = cleanName(recipient.name ?? '');
  if (settings.fromRecipient) {
    return { from: { name, address: recipient.email }, replyTo: undefined, envelopeFrom: recipient.email };
  }
  const organisation = mailbox(settings.replyFrom);
  const via = organisation.name || organisation.address.slice(organisation.address.lastIndexOf('@') + 1);
  const who =
    name && name.toLowerCase() !== recipient.email.toLowerCase() ? `${name} (${recipient.email})` : recipient.email;
  return {
    from: { name: `${who} via ${via}`, address: organisation.address },
    replyTo: { name, address: recipient.email },
    envelopeFrom: organisation.address,
  };
}

function mailbox(text: string): { name: string; address: string } {
  const [first] = addressparser(text, { flatten: true });
  if (!first || !('address' in first) || !first.address)
    throw new Error(`REPLY_FROM ${JSON.stringify(text)} names no address`);
  return { name: cleanName(first.name ?? ''), address: first.address };
}

/** A display name as one short line: no line breaks, no quotes or brackets to confuse a mail client. */
function cleanName(name: string): string {
  return name
    .replace(/[\r\n\t"<>()]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 100);
}

/** The domain of REPLY_FROM's address, to check it against DKIM_DOMAIN at start. */
export function replyIdentityDomain(replyFrom: string): string | undefined {
  const address = mailbox(replyFrom).address;
  return address.slice(address.lastIndexOf('@') + 1);
}
