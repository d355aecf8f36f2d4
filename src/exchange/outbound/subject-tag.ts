import libmime from 'libmime';
import { encodeWords, foldLines } from 'nodemailer/lib/mime-funcs';
import { headWithoutBcc } from './bcc.ts';

/** The first Subject field with its folded lines (the payload's line ends are CRLF since intake). */
const SUBJECT_FIELD = /^subject:[^\r\n]*(?:\r\n[ \t][^\r\n]*)*/im;

/**
 * The header block every copy of an envelope leaves with (relayed or sealed): without Bcc (bcc.ts), and
 * without the subject tag its rule strips (stripSubjectTag, the envelope's subject_strip).
 */
export function outgoingHead(subjectStrip: string | null): (head: Buffer) => Buffer {
  if (!subjectStrip) return headWithoutBcc;
  return (head) => headWithoutSubjectTag(headWithoutBcc(head), subjectStrip);
}

/**
 * A header block whose Subject no longer holds `tag` (its first occurrence, found case-insensitively after
 * RFC 2047 decoding, as the rule matched it), the white space around it collapsed; the same Buffer when the
 * subject does not hold it. The new value is written plain when it is ASCII, else as RFC 2047 words in
 * UTF-8 (nodemailer's encodeWords), folded at 76 characters.
 */
export function headWithoutSubjectTag(head: Buffer, tag: string): Buffer {
  const text = head.toString('latin1');
  const field = SUBJECT_FIELD.exec(text);
  if (!field) return head;
  // Header bytes are read as UTF-8 (RFC 6532), as the intake read them to match.
  const raw = Buffer.from(field[0].slice('subject:'.length), 'latin1').toString('utf8');
  const decoded = libmime.decodeWords(raw.replace(/\r\n(?=[ \t])/g, '').trim());
  const at = decoded.toLowerCase().indexOf(tag.toLowerCase());
  if (at < 0) return head;
  const stripped = `${decoded.slice(0, at)} ${decoded.slice(at + tag.length)}`.replace(/\s+/g, ' ').trim();
  const value = /^[\x20-\x7e]*$/.test(stripped) ? stripped : encodeWords(stripped, 'B', 52);
  const rewritten = foldLines(`Subject: ${value}`, 76, false);
  return Buffer.concat([
    head.subarray(0, field.index),
    Buffer.from(rewritten, 'latin1'),
    head.subarray(field.index + field[0].length),
  ]);
}
