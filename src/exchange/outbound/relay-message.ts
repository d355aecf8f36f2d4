import { Readable } from 'node:stream';
import addressparser from 'nodemailer/lib/addressparser';
import type { DkimSigner } from '../../kernel/dkim.ts';
import type { Envelope } from '../tables.ts';
import { hasLongLine } from '../inbound/body-traits.ts';
import { hasBcc, messageWithoutBcc, streamWithoutBcc } from './bcc.ts';
import { HEADER_LIMIT, headerBlockOf, readHeaderBlock } from './header-block.ts';
import { reencode } from './seven-bit.ts';
import type { OpenPayload } from './types.ts';

export interface RelayOptions {
  /** SMTP_HOSTNAME: the right-hand side of a Message-ID we add. */
  hostname: string;
  /** Signs messages whose From is in DKIM_DOMAIN. */
  dkim?: DkimSigner;
  /** The relay lacks 8BITMIME and the message is 8-bit: re-encode it (seven-bit.ts). */
  sevenBit: boolean;
  /** The intake found a line over 998 octets (the envelope's long_lines): re-encode the parts with one. */
  longLines: boolean;
}

/**
 * The bytes the relay receives for a stored message: the payload (CRLF line ends since intake),
 * with what the relay hop needs and nothing else.
 * - `Date` and `Message-ID` added in front when the message has none (RFC 5322 §3.6 requires both;
 *   Postfix's cleanup adds them too): the Date is the moment Sealpost accepted it, the Message-ID
 *   derived from the envelope id, so a retry sends the same one.
 * - Without its `Bcc:` fields (bcc.ts; the Bcc recipients are in the envelope), as Postfix's cleanup does.
 * - Re-encoded to 7-bit for a relay without 8BITMIME; the parts with a line over 998 octets re-encoded
 *   whatever the relay offers (seven-bit.ts), so that no line goes out longer than RFC 5322 allows.
 * - DKIM-signed when its From is in DKIM_DOMAIN (a reply From REPLY_FROM, the organisation's own
 *   mail; a bounce From NOTIFY_FROM), like OpenDKIM's signing table. A signature already there is kept and
 *   ours added, even one of DKIM_DOMAIN (a message signed upstream, or a bounce signed when it was written,
 *   before signing moved here): a re-encoding may have broken it, and a second signature costs a verifier
 *   nothing (RFC 6376 §4: any one that verifies counts).
 * Everything happens before the signature, which is made over the bytes that go out. A payload held in
 * memory (OpenPayload.bytes), or one to be re-encoded, becomes one Buffer; any other is streamed, read once
 * for the signature and once more for the relay, so that memory stays small.
 * A payload held in memory is looked at for long lines here too: one accepted before the intake
 * recorded them has long_lines false.
 * Returns a function that opens the bytes, to be called once per send.
 */
export async function relayMessage(
  envelope: Pick<Envelope, 'id' | 'created_at'>,
  openPayload: OpenPayload,
  options: RelayOptions,
): Promise<() => Promise<Readable | Buffer>> {
  const whole = await openPayload.bytes();
  const head = whole ? headerBlockOf(whole) : await readHeaderBlock(await openPayload());
  const headText = head.toString('latin1').replace(/\r\n[ \t]+/g, ' ');
  const added = [
    ...(/^date:/im.test(headText) ? [] : [`Date: ${rfc5322Date(envelope.created_at)}`]),
    ...(/^message-id:/im.test(headText) ? [] : [`Message-ID: <${envelope.id}@${options.hostname}>`]),
  ];
  const prefix = Buffer.from(added.map((line) => `${line}\r\n`).join(''), 'latin1');
  const dkim = options.dkim;
  const signs = dkim?.aligned(fromDomain(headText));
  const bcc = hasBcc(headText);
  const rewrite = options.sevenBit || options.longLines || (whole !== undefined && hasLongLine(whole));

  // Re-encoding needs the whole message, whatever its size; so does a Bcc in a header block too long to
  // have been read whole (readHeaderBlock stops at HEADER_LIMIT).
  const held =
    whole ?? (rewrite || (bcc && head.length >= HEADER_LIMIT) ? await readAll(await openPayload()) : undefined);
  if (held) {
    let message = bcc ? messageWithoutBcc(held) : held;
    if (prefix.length) message = Buffer.concat([prefix, message]);
    if (rewrite) message = reencode(message, { eightBit: options.sevenBit });
    if (signs) message = Buffer.concat([await dkim!.signature(message), message]);
    return async () => message;
  }

  const open = async () => {
    const payload = bcc ? streamWithoutBcc(await openPayload()) : await openPayload();
    return prefix.length ? Readable.from(prefixed(prefix, payload)) : payload;
  };
  if (!signs) return open;
  const signature = await dkim!.signature(await open());
  return async () => Readable.from(prefixed(signature, await open()));
}

async function* prefixed(head: Buffer, rest: Readable): AsyncGenerator<Buffer> {
  yield head;
  try {
    for await (const chunk of rest) yield chunk as Buffer;
  } finally {
    rest.destroy();
  }
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The domain of the (first) From address of an unfolded header block. */
function fromDomain(headers: string): string | undefined {
  const value = /^from:\s*(.*)$/im.exec(headers)?.[1];
  if (!value) return undefined;
  const [first] = addressparser(value, { flatten: true });
  const address = first && 'address' in first ? first.address : undefined;
  return address?.includes('@') ? address.slice(address.lastIndexOf('@') + 1) : undefined;
}

/** RFC 5322 date-time in UTC. */
function rfc5322Date(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000');
}
