const MiB = 1024 * 1024;

/**
 * What a reply's files grow to inside the MIME message: base64 (4/3) in 76-character lines ending in
 * CRLF (78/76), as nodemailer's MailComposer writes them — 78 bytes for every 57 of the file.
 */
const ENCODED_PER_BYTE = 78 / 57;

/**
 * Room for the rest of the message: headers, MIME boundaries, and the text and html bodies. The auth
 * service's 1 MiB JSON body limit bounds the bodies; encoded they take 1.04 to 1.37 times their size,
 * up to about 2.1 times for quoted-printable text thick with accents, so 1.5 MiB covers any body in
 * base64 and some 700 KiB of the worst kind — and keeps the suggestion for the defaults at 70MiB. A
 * reply past it is refused by the engine as upload_limit_reached, its draft kept.
 */
export const REPLY_HEADROOM = 1.5 * MiB;

export interface ReplySizeShortfall {
  /** The smallest SMTP_MAX_MESSAGE_SIZE that takes a reply with REPLY_MAX_TOTAL_SIZE of files, in bytes. */
  needed: number;
  /** `needed`, rounded up to whole MiB, as a value for SMTP_MAX_MESSAGE_SIZE. */
  suggested: string;
  /** The most file bytes a reply can carry under the current SMTP_MAX_MESSAGE_SIZE. */
  largestFiles: number;
}

/**
 * Whether the exchange engine takes the largest reply the auth service lets a reader prepare. Replies
 * reach the engine as complete MIME messages, held to its SMTP_MAX_MESSAGE_SIZE; with the defaults
 * (25 MiB against REPLY_MAX_TOTAL_SIZE's 50 MiB) uploads that were accepted fail only when sent, as
 * upload_limit_reached. Undefined when the limits fit.
 */
export function replySizeShortfall(
  replyMaxTotalSize: number,
  smtpMaxMessageSize: number,
): ReplySizeShortfall | undefined {
  const needed = Math.ceil(replyMaxTotalSize * ENCODED_PER_BYTE + REPLY_HEADROOM);
  if (smtpMaxMessageSize >= needed) return undefined;
  return {
    needed,
    suggested: `${Math.ceil(needed / MiB)}MiB`,
    largestFiles: Math.max(0, Math.floor((smtpMaxMessageSize - REPLY_HEADROOM) / ENCODED_PER_BYTE)),
  };
}

/** The start-up warning's sentence, naming both variables, the value to set and what can be sent until then. */
export function replySizeWarning(replyMaxTotalSize: number, smtpMaxMessageSize: number): string | undefined {
  const shortfall = replySizeShortfall(replyMaxTotalSize, smtpMaxMessageSize);
  if (!shortfall) return undefined;
  return (
    `SMTP_MAX_MESSAGE_SIZE (${mib(smtpMaxMessageSize)}) is too small for replies at ` +
    `REPLY_MAX_TOTAL_SIZE (${mib(replyMaxTotalSize)}): their files travel base64-encoded. ` +
    `Set SMTP_MAX_MESSAGE_SIZE=${shortfall.suggested} (or lower REPLY_MAX_TOTAL_SIZE); until then a reply ` +
    `with more than ${mib(shortfall.largestFiles)} of files is refused with upload_limit_reached when it is sent`
  );
}

function mib(bytes: number): string {
  const value = bytes / MiB;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} MiB`;
}
