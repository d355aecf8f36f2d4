import type { Readable } from 'node:stream';
import { MailParser, type AttachmentStream, type MessageText } from 'mailparser';
import { AppError } from '../../kernel/errors.ts';
import { PARSER_OPTIONS, describeAttachment, type AttachmentView } from './read.ts';

export interface FoundAttachment extends Omit<AttachmentView, 'index' | 'size' | 'embedded'> {
  /** The decoded bytes of the part; an error on it means the download broke off. */
  content: Readable;
}

/**
 * Finds attachment `index` of the raw message as it streams in and hands on that part's content alone,
 * so a download never holds the message or the file. Indexes count attachments in the order the MIME
 * parser emits them, the order of readMessage's list, with the same parser and options. Parts before
 * the wanted one are decoded and dropped; once it has ended, the rest of the message is drained unparsed
 * (so the seal service sees its answer read to the end). Resolves with undefined when the message has
 * no such attachment; rejects when the message breaks off or does not parse before the part was found.
 */
export function findAttachment(raw: Readable, index: number): Promise<FoundAttachment | undefined> {
  const parser = new MailParser(PARSER_OPTIONS);
  let seen = 0;
  let found: Readable | undefined;
  let settled = false;

  return new Promise((resolve, reject) => {
    const fail = (error: Error) => {
      parser.destroy();
      raw.destroy();
      if (!settled) {
        settled = true;
        reject(error);
      } else if (found && !found.readableEnded) {
        // Once bytes are out, Fastify destroys the socket: the client sees a broken download, not a short
        // file. Before that, this error is the answer.
        found.destroy(
          new AppError('upstream_failed', 502, `The sealed message broke off: ${error.message}`, { cause: error }),
        );
      }
    };
    raw.on('error', fail);
    parser.on('error', fail);

    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type !== 'attachment') return;
      const position = seen++;
      if (position !== index || settled) {
        (data.content as Readable).on('end', () => data.release()).resume();
        return;
      }
      settled = true;
      const content = data.content as Readable;
      found = content;
      content.once('end', () => {
        // Nothing after the part is needed: stop parsing, read what B still sends to the end.
        raw.unpipe(parser);
        parser.destroy();
        raw.resume();
      });
      content.once('close', () => {
        // Closed before its end: our client went away, so stop reading from B too.
        if (!content.readableEnded) fail(new Error('the download was closed before its end'));
      });
      resolve({ ...describeAttachment(data, position), content });
    });
    parser.on('end', () => {
      if (!settled) {
        settled = true;
        resolve(undefined);
      }
    });
    raw.pipe(parser);
  });
}
