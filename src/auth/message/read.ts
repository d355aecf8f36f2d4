import type { Readable } from 'node:stream';
import {
  MailParser,
  type AddressObject,
  type AttachmentCommon,
  type AttachmentStream,
  type Headers,
  type MessageText,
} from 'mailparser';
import sanitizeHtml from 'sanitize-html';
import { cleanFilename } from '../attachments/filename.ts';
import { shownHeader } from '../hidden-characters.ts';

export interface AddressView {
  name: string;
  address: string;
}

export interface AttachmentView {
  /** Position in the message: GET /v1/message/attachments/{index}. */
  index: number;
  filename: string;
  contentType: string;
  size: number;
  /** Sent inline (Content-Disposition: inline, or a part of a multipart/related body). */
  inline: boolean;
  /** A picture the HTML body shows itself (cid: reference); the reader page does not list it again. */
  embedded: boolean;
}

/** What the reader shows of a sealed message. */
export interface MessageView {
  subject: string;
  from: AddressView[];
  to: AddressView[];
  cc: AddressView[];
  replyTo: AddressView[];
  date: string | null;
  text: string | null;
  /** Sanitised: no scripts, styles, forms, event handlers; no remote images unless asked for. */
  html: string | null;
  /** Images from the internet in the sender's HTML: left out, or kept (https only) when asked for. */
  remoteImages: number;
  attachments: AttachmentView[];
}

/** The MIME parser's options, the same wherever a message is parsed, so attachment indexes agree. */
export const PARSER_OPTIONS = { skipTextToHtml: true } as const;

/**
 * Parses the verified raw message, held whole in memory (the seal service seals nothing larger than
 * SEAL_MAX_MESSAGE_SIZE, and the seal client refuses more); a single attachment is streamed instead
 * (attachment-stream.ts). Only a fixed set of headers is shown: a sealed message also carries
 * headers the reader must not see (X-Sealpost-Mobile names every recipient's mobile number; a Bcc list
 * would name the other hidden recipients).
 */
export async function readMessage(raw: Buffer, options: { remoteImages?: boolean } = {}): Promise<MessageView> {
  const parsed = await parseMessage(raw);
  const { headers } = parsed;
  const date = headers.get('date');
  const embedded = new Set<number>();
  const html = parsed.html
    ? sanitizeMessageHtml(inlineCidImages(parsed.html, parsed.attachments, embedded), options)
    : null;
  return {
    subject: typeof headers.get('subject') === 'string' ? shownHeader(headers.get('subject') as string) : '',
    from: addresses(headers.get('from') as AddressObject | undefined),
    to: addresses(headers.get('to') as AddressObject | AddressObject[] | undefined),
    cc: addresses(headers.get('cc') as AddressObject | AddressObject[] | undefined),
    replyTo: addresses(headers.get('reply-to') as AddressObject | undefined),
    date: date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : null,
    text: parsed.text ?? null,
    html: html?.html ?? null,
    remoteImages: html?.remoteImages ?? 0,
    attachments: parsed.attachments.map((attachment, index) => ({
      index,
      ...describeAttachment(attachment, index),
      size: attachment.size,
      embedded: embedded.has(index),
    })),
  };
}

/** An attachment as readMessage needs it: its bytes only when the HTML may show it (a picture with a cid). */
interface ParsedAttachment extends Pick<AttachmentCommon, 'filename' | 'contentType' | 'related' | 'cid'> {
  contentDisposition: AttachmentCommon['contentDisposition'];
  size: number;
  content: Buffer | undefined;
}

interface ParsedMessage {
  headers: Headers;
  text: string | undefined;
  html: string | undefined;
  attachments: ParsedAttachment[];
}

/**
 * One pass of mailparser's streaming parser, with the options of the attachment download (so indexes
 * agree), keeping what the answer needs: the top-level headers, the text and HTML bodies, each
 * attachment's description and decoded size, and the bytes of the pictures a cid: reference may show.
 * simpleParser would also hold every other attachment whole (a copy of each file, for a list that only
 * shows its size), and resolves cid: links itself without saying which parts they named.
 */
function parseMessage(raw: Buffer): Promise<ParsedMessage> {
  const parser = new MailParser(PARSER_OPTIONS);
  const parsed: ParsedMessage = { headers: new Map(), text: undefined, html: undefined, attachments: [] };
  return new Promise((resolve, reject) => {
    // mailparser may report a non-fatal error and still end: the first error or the end decides.
    let settled = false;
    const settle = (error: Error | undefined) => {
      if (settled) return;
      settled = true;
      if (error) reject(error);
      else resolve(parsed);
    };
    parser.on('error', (error: Error) => settle(error));
    parser.on('headers', (headers: Headers) => {
      parsed.headers = headers;
    });
    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type === 'text') {
        if (typeof data.text === 'string') parsed.text = data.text;
        if (typeof data.html === 'string') parsed.html = data.html;
        return;
      }
      const keep = Boolean(data.cid) && EMBEDDED_IMAGE.test(`data:${data.contentType};base64,`);
      const attachment: ParsedAttachment = {
        filename: data.filename,
        contentType: data.contentType,
        related: data.related,
        cid: data.cid,
        contentDisposition: data.contentDisposition,
        size: 0,
        content: undefined,
      };
      parsed.attachments.push(attachment);
      const chunks: Buffer[] = [];
      const content = data.content as Readable;
      content.on('data', (chunk: Buffer) => {
        if (keep) chunks.push(chunk);
      });
      content.on('end', () => {
        // The parser counts the decoded bytes (its checksum stream) as they pass.
        attachment.size = (data as AttachmentStream & { size?: number }).size ?? 0;
        if (keep) attachment.content = Buffer.concat(chunks);
        data.release();
      });
    });
    parser.on('end', () => settle(undefined));
    parser.end(raw);
  });
}

/** What the list and the download say about an attachment, known from its headers alone. */
export function describeAttachment(
  attachment: Pick<AttachmentCommon, 'filename' | 'contentType' | 'related' | 'contentDisposition'>,
  index: number,
): Omit<AttachmentView, 'index' | 'size' | 'embedded'> {
  return {
    filename: attachmentFilename(attachment, index),
    contentType: safeContentType(attachment.contentType),
    inline: attachment.related === true || attachment.contentDisposition === 'inline',
  };
}

/** The total length of data: URLs written into one HTML body, as mailparser bounds its own inlining:
 * a small message repeating a reference to one picture thousands of times must not grow the HTML
 * without end. References past it stay cid: links, which the sanitiser drops. */
const MAX_INLINED_IMAGES_SIZE = 20 * 1024 * 1024;

/**
 * Replaces each `cid:` reference to a picture of the message with a data: URL of its bytes, as
 * mailparser's simpleParser does by default, and records which attachments were shown that way
 * (`embedded`), which simpleParser does not say.
 */
function inlineCidImages(html: string, attachments: ParsedAttachment[], embedded: Set<number>): string {
  const byCid = new Map<string, number>();
  attachments.forEach((attachment, index) => {
    if (attachment.cid && attachment.content && !byCid.has(attachment.cid)) byCid.set(attachment.cid, index);
  });
  const urls = new Map<number, string>();
  let budget = MAX_INLINED_IMAGES_SIZE;
  return html.replace(/\bcid:([^'"\s]{1,256})/g, (reference, cid: string) => {
    const index = byCid.get(cid);
    if (index === undefined) return reference;
    const attachment = attachments[index]!;
    const url =
      urls.get(index) ??
      `data:${attachment.contentType.toLowerCase()};base64,${attachment.content!.toString('base64')}`;
    if (url.length > budget) return reference;
    budget -= url.length;
    urls.set(index, url);
    embedded.add(index);
    return url;
  });
}

function addresses(field: AddressObject | AddressObject[] | undefined): AddressView[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects.flatMap((object) =>
    object.value.flatMap((entry) =>
      (entry.group ?? [entry]).map((member) => ({
        name: shownHeader(member.name ?? ''),
        address: shownHeader(member.address ?? ''),
      })),
    ),
  );
}

const EMBEDDED_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,/i;
const REMOTE_IMAGE = /^https?:\/\//i;

/**
 * The reader shows the sender's HTML inside our origin, so it is cut down to formatting: no scripts,
 * styles, frames, forms or event handlers; links open in a new tab without referrer; images only when
 * embedded in the message (remote images would tell the sender when and where the message was read).
 * With `remoteImages` (the reader pressed "show images") https images are kept; http ones never are.
 */
export function sanitizeMessageHtml(
  html: string,
  options: { remoteImages?: boolean } = {},
): { html: string; remoteImages: number } {
  let remoteImages = 0;
  const sanitized = sanitizeHtml(html, {
    allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'center', 'font', 'span', 'del', 'ins', 'sub', 'sup'],
    allowedAttributes: {
      a: ['href', 'name', 'title', 'target', 'rel'],
      img: ['src', 'alt', 'title', 'width', 'height'],
      font: ['color', 'size', 'face'],
      table: ['width', 'border', 'cellpadding', 'cellspacing', 'align'],
      td: ['colspan', 'rowspan', 'align', 'valign', 'width'],
      th: ['colspan', 'rowspan', 'align', 'valign', 'width'],
      '*': ['dir', 'lang'],
    },
    allowedSchemes: ['http', 'https', 'mailto'],
    allowedSchemesByTag: { img: options.remoteImages ? ['data', 'https'] : ['data'] },
    allowProtocolRelative: false,
    transformTags: {
      a: (tagName, attribs) => ({
        tagName,
        attribs: { ...attribs, target: '_blank', rel: 'noopener noreferrer nofollow' },
      }),
      img: (tagName, attribs) => {
        const { src, ...rest } = attribs;
        if (src && REMOTE_IMAGE.test(src)) remoteImages += 1;
        const keep = src && (EMBEDDED_IMAGE.test(src) || (options.remoteImages && /^https:\/\//i.test(src)));
        return { tagName, attribs: keep ? { ...rest, src } : rest };
      },
    },
  });
  return { html: sanitized, remoteImages };
}

/** The attachment's name for the list and the download (cleanFilename), or a numbered one. */
export function attachmentFilename(attachment: Pick<AttachmentCommon, 'filename'>, index: number): string {
  return cleanFilename(attachment.filename, `attachment-${index + 1}`);
}

export function safeContentType(type: string | undefined): string {
  return type && /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i.test(type)
    ? type.toLowerCase()
    : 'application/octet-stream';
}
