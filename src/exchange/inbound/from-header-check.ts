import type { Readable } from 'node:stream';
import addressparser from 'nodemailer/lib/addressparser';
import { AppError } from '../../kernel/errors.ts';

/** The header section is read up to this size; a From header further down is not looked for. */
const HEADER_LIMIT = 64 * 1024;

/**
 * Watches the DATA stream for the end of the header section and checks the From header's addresses
 * (INBOUND_SMTP_SENDER_DOMAINS): the first one outside the organisation's domains, or a message without
 * a From address, calls `refuse` with a 550 AppError while the message is still arriving, so the upload
 * fails and nothing is stored or acknowledged. Reads alongside the pipe, taking nothing from it.
 */
export function watchFromHeader(
  stream: Readable,
  isOwnSender: (address: string) => boolean,
  refuse: (error: AppError) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
    const text = Buffer.concat(chunks).toString('utf8');
    const end = text.search(/\r?\n\r?\n/);
    if (end < 0 && size < HEADER_LIMIT) return;
    stream.off('data', onData);
    const problem = fromProblem(end < 0 ? text : text.slice(0, end), isOwnSender);
    if (problem) refuse(new AppError(undefined, 550, problem));
  };
  stream.on('data', onData);
}

function fromProblem(header: string, isOwnSender: (address: string) => boolean): string | undefined {
  const unfolded = header.replace(/\r?\n[ \t]+/g, ' ');
  const values = [...unfolded.matchAll(/^From:[ \t]*(.*)$/gim)].map((match) => match[1]!);
  const addresses = values.flatMap((value) =>
    addressparser(value, { flatten: true }).map((entry) => entry.address ?? ''),
  );
  if (addresses.length === 0 || addresses.some((address) => !address.includes('@'))) {
    return 'The message has no From address; this server only takes mail from its own domains';
  }
  const foreign = addresses.find((address) => !isOwnSender(address));
  return foreign === undefined ? undefined : `From: <${foreign}> is not in a domain this server takes mail from`;
}
