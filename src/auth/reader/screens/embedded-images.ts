import type { MessageAttachment, SealedMessage } from '../api.ts';

/** The picture types the server's sanitiser keeps as data: images in the HTML (src/auth/message/read.ts). */
const EMBEDDED_IMAGE = /^data:(image\/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/=\s]*)$/i;

/**
 * The attachments to offer for download: all of them except the pictures the HTML body shows itself.
 *
 * The server marks an attachment `inline` both for a picture the HTML embeds (cid:) and for any part
 * sent with Content-Disposition: inline — Apple Mail sends a PDF that way next to an HTML body, and
 * hiding that would lose it. GET /v1/message does not say which part a cid: pointed to; the server
 * writes each embedded picture into the HTML as a data: URL of the attachment's bytes, so a picture
 * counts as shown when the HTML holds a data: image of its type and exact size.
 */
export function listedAttachments(message: Pick<SealedMessage, 'html' | 'attachments'>): MessageAttachment[] {
  if (!message.html) return message.attachments;
  const shown = shownImages(message.html);
  return message.attachments.filter((attachment) => {
    if (!attachment.inline) return true;
    const key = `${attachment.contentType.toLowerCase()} ${attachment.size}`;
    const left = shown.get(key) ?? 0;
    if (left === 0) return true;
    shown.set(key, left - 1);
    return false;
  });
}

/** "type size" → how many data: images of that type and decoded size the HTML shows. */
function shownImages(html: string): Map<string, number> {
  // An inert document: nothing in it loads or runs.
  const document = new DOMParser().parseFromString(html, 'text/html');
  const shown = new Map<string, number>();
  for (const image of Array.from(document.images)) {
    const match = EMBEDDED_IMAGE.exec(image.getAttribute('src') ?? '');
    if (!match) continue;
    const key = `${match[1]!.toLowerCase()} ${base64Size(match[2]!)}`;
    shown.set(key, (shown.get(key) ?? 0) + 1);
  }
  return shown;
}

function base64Size(base64: string): number {
  const clean = base64.replace(/\s+/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.floor((clean.length * 3) / 4) - padding;
}
