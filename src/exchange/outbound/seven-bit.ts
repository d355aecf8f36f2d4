import { encode as base64Encode, wrap as base64Wrap } from 'nodemailer/lib/base64';
import { encode as qpEncode, wrap as qpWrap } from 'nodemailer/lib/qp';

/** A message that cannot be made 7-bit without changing what it says; the reason goes into the bounce. */
export class SevenBitImpossible extends Error {}

/**
 * A line over 998 octets that cannot be made shorter without changing the message (a header line with no
 * whitespace to fold at, a message/* part other than message/rfc822); the reason goes into the bounce.
 */
export class LineTooLong extends Error {}

const CRLF = '\r\n';
/** RFC 5322 §2.1.1: at most 998 octets before the CRLF. */
const LONG_LINE = /[^\r\n]{999}/;
const EIGHT_BIT = /[\x80-\xff]/;

export interface ReencodeOptions {
  /** The relay lacks 8BITMIME: parts with 8-bit bytes are re-encoded as well as those with long lines. */
  eightBit: boolean;
}

/** reencode for a relay without 8BITMIME. */
export function toSevenBit(message: Buffer): Buffer {
  return reencode(message, { eightBit: true });
}

/** The message/* types a transfer encoding may carry, unlike message/rfc822 (RFC 2046 §5.2.1). */
const GLOBAL_MESSAGE_TYPES = new Set([
  'message/global',
  'message/global-headers',
  'message/global-delivery-status',
  'message/global-disposition-notification',
]);

/**
 * The message made fit for a relay: every leaf part with a line over 998 octets (RFC 5322 §2.1.1), and
 * with `eightBit` every leaf part with 8-bit bytes (RFC 6152 §3: the client must convert the message or
 * refuse it), is re-encoded, text as quoted-printable and anything else as base64, with its
 * Content-Transfer-Encoding set; a part already quoted-printable or base64 whose lines are too long is
 * wrapped again, its content unchanged. A header line over 998 octets is folded at whitespace. Multipart
 * bodies and message/rfc822 parts are walked part by part, everything else is kept byte for byte. So a long
 * line arrives as lines of at most 998 octets with its content intact, where Postfix's
 * smtp_line_length_limit breaks it and changes what it says.
 * Impossible, thrown as SevenBitImpossible: 8-bit bytes in a header (that needs SMTPUTF8), in a message/*
 * part other than the message/global* ones (RFC 2046 §5.2.1 allows no encoding there) or outside the parts
 * of a multipart; thrown as LineTooLong: a header line with no whitespace to fold at, a long line in another
 * message/* part or outside the parts of a multipart.
 *
 * Hand-written because the libraries at hand parse a message into a different one (mailparser) or
 * build new messages (nodemailer); this keeps every byte it does not have to change. The message is in
 * memory: the rare case of an 8-bit message meeting an old relay, or of a line over 998 octets, bounded
 * by SMTP_MAX_MESSAGE_SIZE.
 */
export function reencode(message: Buffer, options: ReencodeOptions): Buffer {
  return Buffer.from(entity(message.toString('latin1'), 'the message', options), 'latin1');
}

/** One MIME entity (header and body) as latin1 text, so that every byte is one character. */
function entity(text: string, where: string, options: ReencodeOptions): string {
  const eightBit = options.eightBit && EIGHT_BIT.test(text);
  if (!eightBit && !LONG_LINE.test(text)) return text;
  // A part may have no header at all: it then starts with the empty line.
  const split = text.startsWith(CRLF) ? -2 : text.indexOf(CRLF + CRLF);
  const rawHead = split === -2 ? '' : split < 0 ? text : text.slice(0, split + 2);
  const body = split === -2 ? text.slice(2) : split < 0 ? '' : text.slice(split + 4);
  if (options.eightBit && EIGHT_BIT.test(rawHead))
    throw new SevenBitImpossible(
      `${where} has 8-bit characters in a header, which only a relay with SMTPUTF8 may take`,
    );
  const head = foldLongLines(rawHead, where);
  const unfolded = head.replace(/\r\n[ \t]+/g, ' ');
  const contentType = /^content-type:\s*([^;\r\n]+)(.*)$/im.exec(unfolded);
  const type = (contentType?.[1] ?? 'text/plain').trim().toLowerCase();
  const bodyEightBit = options.eightBit && EIGHT_BIT.test(body);
  if (!bodyEightBit && !LONG_LINE.test(body)) return split < 0 ? head : `${head}${CRLF}${body}`;

  if (type.startsWith('multipart/')) {
    const boundary = /;\s*boundary\s*=\s*(?:"([^"]+)"|([^;\s]+))/i.exec(contentType?.[2] ?? '');
    const delimiter = boundary?.[1] ?? boundary?.[2];
    if (!delimiter) throw new SevenBitImpossible(`${where} is a multipart without a boundary`);
    return head + CRLF + multipart(body, delimiter, where, options);
  }
  // RFC 6532 §3.5 and RFC 6533 §6: message/global and its report kin may be encoded (as leaves, below).
  if (type.startsWith('message/') && !GLOBAL_MESSAGE_TYPES.has(type)) {
    if (bodyEightBit)
      throw new SevenBitImpossible(
        `${where} is a ${type} part with 8-bit content, which no transfer encoding may carry`,
      );
    // Its lines are long: an enclosed message is an entity of its own, whose parts may be re-encoded.
    if (type === 'message/rfc822') return head + CRLF + entity(body, `${where}, its enclosed message`, options);
    throw new LineTooLong(
      `${where} is a ${type} part with a line over 998 octets, which no transfer encoding may carry`,
    );
  }

  const encoding = /^content-transfer-encoding:\s*(\S+)/im.exec(unfolded)?.[1]?.toLowerCase();
  if (encoding === 'quoted-printable' || encoding === 'base64') {
    if (bodyEightBit) throw new SevenBitImpossible(`${where} is declared ${encoding} but holds 8-bit bytes`);
    return head + CRLF + (encoding === 'base64' ? rewrapBase64(body) : rewrapQuotedPrintable(body));
  }
  const bytes = Buffer.from(body, 'latin1');
  const text7 = type.startsWith('text/') ? qpWrap(qpEncode(bytes), 76) : base64Wrap(base64Encode(bytes), 76);
  const newEncoding = type.startsWith('text/') ? 'quoted-printable' : 'base64';
  const withoutEncoding = head.replace(/^content-transfer-encoding:[^\r\n]*\r\n(?:[ \t][^\r\n]*\r\n)*/im, '');
  return `${withoutEncoding}Content-Transfer-Encoding: ${newEncoding}${CRLF}${CRLF}${text7}`;
}

/**
 * A header block with each line over 998 octets folded (RFC 5322 §2.2.3: a CRLF before whitespace), at
 * the last whitespace that keeps the line within 998 octets; a line with none is LineTooLong.
 */
function foldLongLines(head: string, where: string): string {
  if (!LONG_LINE.test(head)) return head;
  return head
    .split(CRLF)
    .map((line) => {
      const lines: string[] = [];
      let rest = line;
      while (rest.length > 998) {
        // A fold needs something other than whitespace before it on the line.
        const at = Math.max(rest.lastIndexOf(' ', 998), rest.lastIndexOf('\t', 998));
        if (at <= 0 || !/[^ \t]/.test(rest.slice(0, at))) {
          const name = /^[^:\s]+/.exec(line)?.[0] ?? 'a header';
          throw new LineTooLong(
            `${where} has a header line (${name}) over 998 octets without whitespace to fold it at ` +
              '(RFC 5322 §2.1.1); breaking it would change the header',
          );
        }
        lines.push(rest.slice(0, at));
        rest = rest.slice(at);
      }
      lines.push(rest);
      return lines.join(CRLF);
    })
    .join(CRLF);
}

/** Base64 lines joined and cut again at 76 characters: the same content. */
function rewrapBase64(body: string): string {
  const wrapped = base64Wrap(body.replace(/[\r\n \t]+/g, ''), 76);
  return body.endsWith(CRLF) ? wrapped + CRLF : wrapped;
}

/** Quoted-printable lines over 76 characters cut by soft line breaks (`=` CRLF, RFC 2045 §6.7), never inside `=XX`. */
function rewrapQuotedPrintable(body: string): string {
  return body
    .split(CRLF)
    .map((line) => {
      const lines: string[] = [];
      let rest = line;
      while (rest.length > 76) {
        let cut = 75;
        const equals = rest.lastIndexOf('=', cut - 1);
        if (equals >= cut - 2) cut = equals;
        lines.push(`${rest.slice(0, cut)}=`);
        rest = rest.slice(cut);
      }
      lines.push(rest);
      return lines.join(CRLF);
    })
    .join(CRLF);
}

/** The parts between `--boundary` lines, each re-encoded on its own; preamble and epilogue must need nothing. */
function multipart(body: string, boundary: string, where: string, options: ReencodeOptions): string {
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
    if (inPart) out.push(entity(chunk.replace(/^\r\n/, ''), `${where}, part ${++index}`, options).replace(/^/, CRLF));
    else out.push(outsideParts(chunk, where, options));
    out.push(match[0]);
    last = match.index + match[0].length;
    inPart = !match[2];
    closed = Boolean(match[2]);
    if (closed) break;
  }
  const rest = body.slice(last);
  if (inPart && !closed) {
    out.push(CRLF + entity(rest.replace(/^\r\n/, ''), `${where}, part ${++index}`, options));
  } else {
    out.push(outsideParts(rest, where, options));
  }
  return out.join('');
}

/** A preamble or epilogue, kept as it is: nothing may be encoded there. */
function outsideParts(text: string, where: string, options: ReencodeOptions): string {
  if (options.eightBit && EIGHT_BIT.test(text))
    throw new SevenBitImpossible(`${where} has 8-bit characters outside its parts`);
  if (LONG_LINE.test(text)) throw new LineTooLong(`${where} has a line over 998 octets outside its parts`);
  return text;
}
