import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { simpleParser, type AddressObject } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { cleanFilename } from '../attachments/filename.ts';
import { sanitizeMessageHtml } from '../message/read.ts';

/** What a reply takes from the message it answers. */
export interface OriginalHeaders {
  messageId: string | undefined;
  references: string[];
  subject: string;
  /** Display names the original gave its To and Cc addresses, by lower-cased address. */
  names: Map<string, string>;
}

export interface ReplyAttachment {
  filename: string;
  contentType: string;
  /** Opens the file's bytes; called only when the composer reaches this attachment. */
  open(): Promise<Readable>;
}

export interface Reply {
  from: { name: string; address: string };
  replyTo?: { name: string; address: string };
  to: string;
  original: OriginalHeaders;
  text: string;
  html?: string;
  attachments: ReplyAttachment[];
  date: Date;
}

/** Threads longer than this keep the first and the latest references (RFC 5322 3.6.4 allows trimming). */
const MAX_REFERENCES = 20;

/** Reads only the header block of the raw message: the body may be large and is not needed. */
export async function originalHeaders(raw: Buffer, fallbackSubject: string): Promise<OriginalHeaders> {
  let end = raw.indexOf('\r\n\r\n');
  if (end < 0) end = raw.indexOf('\n\n');
  const head = end < 0 ? raw : raw.subarray(0, end);
  const parsed = await simpleParser(Buffer.concat([head, Buffer.from('\r\n\r\n')]), {
    skipTextToHtml: true,
    skipTextLinks: true,
  }).catch(() => undefined);
  // A header block the parser refuses (over its size limit, say) must not make replying impossible: the
  // reply goes out with the sealed record's subject, unthreaded (found by test/security/oversized-headers).
  if (!parsed) return { messageId: undefined, references: [], subject: fallbackSubject, names: new Map() };
  const references =
    parsed.references === undefined
      ? []
      : Array.isArray(parsed.references)
        ? parsed.references
        : parsed.references.split(/\s+/);
  return {
    messageId: parsed.messageId && /^<[^<>\s]+>$/.test(parsed.messageId) ? parsed.messageId : undefined,
    references: references.filter((id) => /^<[^<>\s]+>$/.test(id)),
    subject: parsed.subject ?? fallbackSubject,
    names: displayNames([parsed.to, parsed.cc]),
  };
}

function displayNames(fields: Array<AddressObject | AddressObject[] | undefined>): Map<string, string> {
  const names = new Map<string, string>();
  for (const field of fields.flatMap((f) => (f === undefined ? [] : Array.isArray(f) ? f : [f]))) {
    for (const entry of field.value.flatMap((v) => v.group ?? [v])) {
      if (entry.address && entry.name && !names.has(entry.address.toLowerCase()))
        names.set(entry.address.toLowerCase(), entry.name);
    }
  }
  return names;
}

/** "Re: <subject>", without piling up prefixes on a subject that is a reply already. */
export function replySubject(subject: string): string {
  const trimmed = subject.trim();
  return /^re:/i.test(trimmed) ? trimmed : `Re: ${trimmed}`;
}

/**
 * The reply as a complete MIME message (nodemailer's MailComposer), streamed: each attachment is read
 * from the object store only when the composer gets to it, so memory stays small whatever the files'
 * size. In-Reply-To and References point at the sealed message (RFC 5322 3.6.4), so it threads with it.
 */
export function composeReply(reply: Reply): { messageId: string; stream: Readable } {
  const { original } = reply;
  const thread = original.messageId ? [...original.references, original.messageId] : original.references;
  const references = thread.length > MAX_REFERENCES ? [thread[0]!, ...thread.slice(-(MAX_REFERENCES - 1))] : thread;
  const domain = reply.from.address.slice(reply.from.address.lastIndexOf('@') + 1);
  const messageId = `<${randomUUID()}@${domain}>`;
  const composer = new MailComposer({
    from: reply.from,
    ...(reply.replyTo ? { replyTo: reply.replyTo } : {}),
    to: reply.to,
    subject: replySubject(original.subject),
    messageId,
    date: reply.date,
    ...(original.messageId ? { inReplyTo: original.messageId } : {}),
    ...(references.length ? { references } : {}),
    text: reply.text,
    ...(reply.html !== undefined ? { html: replyHtml(reply.html) } : {}),
    attachments: reply.attachments.map((attachment) => ({
      // Cleaned again: a draft may hold a name stored before cleanFilename dropped format characters.
      filename: cleanFilename(attachment.filename, 'attachment'),
      contentType: attachment.contentType,
      content: Readable.from(lazily(attachment.open)),
    })),
    newline: 'windows',
    // Every part comes from us: never a file path or a URL for nodemailer to fetch.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return { messageId, stream: composer.compile().createReadStream() };
}

/**
 * The reply's HTML is whatever the client sent, and it leaves under the organisation's name: it is cut
 * down by the reader's own sanitiser, so a script or an event handler can no more leave in a reply than
 * it can be shown from a sealed message. Images from https are kept: they are the writer's to send, and
 * the receiving mail client decides whether to load them (the reader drops them to protect the one
 * reading, who here is someone else). A reply without HTML stays text only: none is made from the text.
 */
function replyHtml(html: string): string {
  return sanitizeMessageHtml(html, { remoteImages: true }).html;
}

async function* lazily(open: () => Promise<Readable>): AsyncGenerator<Buffer> {
  yield* await open();
}
