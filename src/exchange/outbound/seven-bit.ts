import { encode as base64Encode, wrap as base64Wrap } from 'nodemailer/lib/base64';
import { encode as qpEncode, wrap as qpWrap } from 'nodemailer/lib/qp';

/** A message that cannot be made 7-bit without changing what it says; the reason goes into the bounce. */
export class SevenBitImpossible extends Error {}

const CRLF = '\r\n';

/** The message/* types a transfer encoding may carry, unlike message/rfc822 (RFC 2046 §5.2.1). */
const GLOBAL_MESSAGE_TYPES = new Set([
  'message/global',
  'message/global-headers',
  'message/global-delivery-status',
  'message/global-disposition-notification',
]);

/**
 * The message re-encoded for a relay that does not offer 8BITMIME (RFC 6152 §3: the client must
 * convert the message or refuse it): every leaf part with 8-bit bytes is re-encoded, text as
 * quoted-printable and anything else as base64, with its Content-Transfer-Encoding set; multipart
 * bodies are walked part by part, everything else is kept byte for byte. Impossible, and thrown as
 * SevenBitImpossible: 8-bit bytes in a header (that needs SMTPUTF8), in a message/* part other than
 * the message/global* ones (RFC 2046 §5.2.1 allows no encoding there) or outside the parts of a multipart.
 *
 * Hand-written because the libraries at hand parse a message into a different one (mailparser) or
 * build new messages (nodemailer); this keeps every byte it does not have to change. The message is in
 * memory: this is the rare case of an 8-bit message meeting an old relay, bounded by SMTP_MAX_MESSAGE_SIZE.
 */
export function toSevenBit(message: Buffer): Buffer {
  return Buffer.from(entity(message.toString('latin1'), 'the message'), 'latin1');
}

/** One MIME entity (header and body) as latin1 text, so that every byte is one character. */
function entity(text: string, where: string): string {
  if (!/[\x80-\xff]/.test(text)) return text;
  // A part may have no header at all: it then starts with the empty line.
  const split = text.startsWith(CRLF) ? -2 : text.indexOf(CRLF + CRLF);
  const head = split === -2 ? '' : split < 0 ? text : text.slice(0, split + 2);
  const body = split === -2 ? text.slice(2) : split < 0 ? '' : text.slice(split + 4);
  if (/[\x80-\xff]/.test(head))
    throw new SevenBitImpossible(
      `${where} has 8-bit characters in a header, which only a relay with SMTPUTF8 may take`,
    );
  const unfolded = head.replace(/\r\n[ \t]+/g, ' ');
  const contentType = /^content-type:\s*([^;\r\n]+)(.*)$/im.exec(unfolded);
  const type = (contentType?.[1] ?? 'text/plain').trim().toLowerCase();

  if (type.startsWith('multipart/')) {
    const boundary = /;\s*boundary\s*=\s*(?:"([^"]+)"|([^;\s]+))/i.exec(contentType?.[2] ?? '');
    const delimiter = boundary?.[1] ?? boundary?.[2];
    if (!delimiter) throw new SevenBitImpossible(`${where} is a multipart without a boundary`);
    return head + CRLF + multipart(body, delimiter, where);
  }
  // RFC 6532 §3.5 and RFC 6533 §6: message/global and its report kin may be encoded (base64 below).
  if (type.startsWith('message/') && !GLOBAL_MESSAGE_TYPES.has(type))
    throw new SevenBitImpossible(`${where} is a ${type} part with 8-bit content, which no transfer encoding may carry`);

  const encoding = /^content-transfer-encoding:\s*(\S+)/im.exec(unfolded)?.[1]?.toLowerCase();
  if (encoding === 'quoted-printable' || encoding === 'base64') {
    throw new SevenBitImpossible(`${where} is declared ${encoding} but holds 8-bit bytes`);
  }
  const bytes = Buffer.from(body, 'latin1');
  const text7 = type.startsWith('text/') ? qpWrap(qpEncode(bytes), 76) : base64Wrap(base64Encode(bytes), 76);
  const newEncoding = type.startsWith('text/') ? 'quoted-printable' : 'base64';
  const withoutEncoding = head.replace(/^content-transfer-encoding:[^\r\n]*\r\n(?:[ \t][^\r\n]*\r\n)*/im, '');
  return `${withoutEncoding}Content-Transfer-Encoding: ${newEncoding}${CRLF}${CRLF}${text7}`;
}

/** The parts between `--boundary` lines, each re-encoded on its own; preamble and epilogue must be 7-bit. */
function multipart(body: string, boundary: string, where: string): string {
  const escaped = boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // A delimiter line: at the start of the body or after CRLF, then optional "--" (the close) and padding.
  const delimiter = new RegExp(`(^|\\r\\n)--${escaped}(--)?[ \\t]*(?=\\r\\n|$)`, 'g');
  const out: string[] = [];
  let last = 0;
  let index = 0;
  let inPart = false;
  let closed = false;
  for (const match of body.matchAll(delimiter)) {
    const chunk = body.slice(last, match.index);
    if (inPart) out.push(entity(chunk.replace(/^\r\n/, ''), `${where}, part ${++index}`).replace(/^/, CRLF));
    else if (/[\x80-\xff]/.test(chunk)) throw new SevenBitImpossible(`${where} has 8-bit characters outside its parts`);
    else out.push(chunk);
    out.push(match[0]);
    last = match.index + match[0].length;
    inPart = !match[2];
    closed = Boolean(match[2]);
    if (closed) break;
  }
  const rest = body.slice(last);
  if (inPart && !closed) {
    out.push(CRLF + entity(rest.replace(/^\r\n/, ''), `${where}, part ${++index}`));
  } else {
    if (/[\x80-\xff]/.test(rest)) throw new SevenBitImpossible(`${where} has 8-bit characters outside its parts`);
    out.push(rest);
  }
  return out.join('');
}
