import type { Readable } from 'node:stream';
import addressparser from 'nodemailer/lib/addressparser';
import { AppError } from '../../kernel/errors.ts';
import { headerEnd } from '../outbound/header-block.ts';

/** The header section is read up to this size; a header further down is not looked at. */
const HEADER_LIMIT = 64 * 1024;

/**
 * Watches the DATA stream for the end of the header section and hands it to `check` once (at most
 * HEADER_LIMIT bytes of it): a refusal it returns fails the upload through `refuse` while the message is
 * still arriving, so nothing is stored or acknowledged. Reads alongside the pipe, taking nothing from it.
 * The end is looked for in the bytes, and only the header section is decoded: every message passes here.
 */
export function watchHeaderSection(
  stream: Readable,
  check: (header: string) => AppError | undefined,
  refuse: (error: AppError) => void,
): void {
  let head: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const end = headerEnd(head);
    if (end === undefined && head.length < HEADER_LIMIT) return;
    stream.off('data', onData);
    const refusal = check(head.subarray(0, Math.min(end ?? head.length, HEADER_LIMIT)).toString('utf8'));
    if (refusal) refuse(refusal);
  };
  stream.on('data', onData);
}

/**
 * INBOUND_SMTP_SENDER_DOMAINS: the first From address outside the organisation's domains, or a message
 * without a From address, is a 550 AppError.
 */
export function fromRefusal(header: string, isOwnSender: (address: string) => boolean): AppError | undefined {
  const unfolded = header.replace(/\r?\n[ \t]+/g, ' ');
  const values = [...unfolded.matchAll(/^From:[ \t]*(.*)$/gim)].map((match) => match[1]!);
  const addresses = values.flatMap((value) =>
    addressparser(value, { flatten: true }).map((entry) => entry.address ?? ''),
  );
  if (addresses.length === 0 || addresses.some((address) => !address.includes('@'))) {
    return new AppError(
      undefined,
      550,
      'The message has no From address; this server only takes mail from its own domains',
    );
  }
  const foreign = addresses.find((address) => !isOwnSender(address));
  return foreign === undefined
    ? undefined
    : new AppError(undefined, 550, `From: <${foreign}> is not in a domain this server takes mail from`);
}
