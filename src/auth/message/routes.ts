import { Type, type Static } from 'typebox';
import { AppError, notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import { afterEnd, requireSignedIn, type AuthContext, type SignedInSession } from '../context.ts';
import { MESSAGE_QUERY, MessageQuery } from './query.ts';
import { findAttachment } from './attachment-stream.ts';
import { readMessage } from './read.ts';
import { MESSAGE_ID_PATTERN, isSealBroken, withSealCid } from '../seal/client.ts';
import type { ListPosition } from '../sessions/access.ts';
import { TAGS, errorResponses } from '../route-docs.ts';
import { MessageResponse } from '../../contracts/auth.ts';

const OpenableList = Type.Object({
  messages: Type.Array(
    Type.Object({
      id: Type.String(),
      sender: Type.String(),
      subject: Type.String(),
      sealedAt: Type.String({ format: 'date-time' }),
    }),
  ),
  next: Type.Union([Type.String(), Type.Null()], {
    description: 'the cursor of the next page (send it back as `cursor`); null on the last page',
  }),
});

/**
 * Reading the sealed message of the signed-in session. The content comes from the seal service only
 * after it verified the SHA-256; when it cannot, the answer is a 502 and nothing of the content is shown.
 * GET /v1/message parses the whole message in memory (at most SEAL_MAX_MESSAGE_SIZE); an attachment
 * download streams its one part from the seal service's answer to ours.
 */
export async function messageRoutes(
  app: App,
  context: Pick<AuthContext, 'clock' | 'seal' | 'access' | 'endedDrafts' | 'trail'>,
) {
  async function load(session: SignedInSession, options: { remoteImages?: boolean } = {}) {
    const { messageId } = session;
    // One request to B: the verified content comes with the seal it was verified against. B is asked for this
    // reader, and answers 410 once the message ended for everyone or was withdrawn for them.
    const { content, seal } = await context.seal.read(messageId, session.email).catch(async (error: unknown) => {
      throw await withBrokenSealCid(error, messageId);
    });
    // Without the seal in B's answer (too long for a header, or a B from before it), the record has it.
    const record = seal ?? (await context.seal.sealed(messageId));
    if (!record) throw notFound('The sealed message is no longer available');
    const view = await readMessage(content, options).catch(unreadable);
    return { record, view };
  }

  /** A broken seal names its CID: B's error object does; from a B that does not, the record's. */
  async function withBrokenSealCid(error: unknown, messageId: string): Promise<unknown> {
    if (!isSealBroken(error) || error.details.cid !== undefined) return error;
    const record = await context.seal.sealed(messageId).catch(() => undefined);
    return record ? withSealCid(error, record.cid) : error;
  }

  app.get(
    '/v1/message',
    {
      schema: {
        tags: TAGS.reading,
        summary: 'The sealed message of the signed-in session: headers, text, sanitised HTML, attachments, seal status',
        description:
          'Images from the internet are left out of the HTML (they would tell the sender when ' +
          'and where it was read); remoteImages counts them. images=remote keeps the https ones, ' +
          'for a reader who chose to see them. Content that failed verification against its seal: ' +
          '502 seal_broken with the cid (final); other 502s are upstream_failed. Once the message ended, or was ' +
          'withdrawn for this reader: 410 message_expired or message_withdrawn with endedAt and contact (final).',
        querystring: Type.Object(
          { images: Type.Optional(Type.Literal('remote')), ...MESSAGE_QUERY },
          { additionalProperties: false },
        ),
        response: { 200: MessageResponse, ...errorResponses(401, 404, 410, 502) },
      },
    },
    async (request, reply) => {
      const session = await requireSignedIn(request, context.access, request.query.messageId);
      const { record, view } = await load(session, { remoteImages: request.query.images === 'remote' }).catch(
        (error: unknown) => afterEnd(request, context, session, error),
      );
      // The answer is mostly one or two long strings (the text and the HTML). The schema's serializer
      // escapes each into a string of its own and joins them into a rope, which Node flattens for the
      // Content-Length and again, with the status line and headers in front, for the socket: copies of
      // the body that were a third of what a read allocated (bench/RESULTS.md, "The reader's answer in
      // one copy"). JSON.stringify writes one flat string and the Buffer goes out as it is. Every field
      // is named here, as the schema's serializer would have kept only those.
      const pins = record.pins.map(({ cluster, status, error }) => ({ cluster, status, error }));
      const answer: Static<typeof MessageResponse> = {
        id: record.id,
        ...view,
        seal: { verified: true, cid: record.cid, sha256: record.sha256, sealedAt: record.sealedAt, pins },
      };
      const json = Buffer.from(JSON.stringify(answer));
      const client = context.trail.client(request);
      context.trail.report(record.id, { event: 'opened', recipient: session.email, client }, request.log);
      // The type provider types send() by the 200 schema; these bytes are that schema's JSON.
      return reply.type('application/json; charset=utf-8').send(json as unknown as typeof answer);
    },
  );

  app.get(
    '/v1/messages',
    {
      schema: {
        tags: TAGS.reading,
        summary: 'The sealed messages this session opens without another code, newest first',
        description:
          'Every sealed message addressed to an address the session has proven whose ' +
          'sign-in method that proof satisfies: an email code proves the address, ' +
          'an SMS code the address with that mobile number (docs/decisions.md#sessions-follow-the-person). ' +
          'Messages that ended (expired or withdrawn) are left out. Paged: `limit` entries (default 20, at most ' +
          '100) after `cursor` (the `next` of the page before); `except` leaves out one message (the one shown).',
        querystring: MessagesQuery,
        response: { 200: OpenableList, ...errorResponses(400, 401, 502) },
      },
    },
    async (request) => {
      const session = request.readerSession;
      if (!session?.row.signed_in_at)
        throw new AppError('unauthenticated', 401, 'Not signed in: request a code and sign in first');
      const { limit = '20', cursor, except } = request.query;
      const page = await context.access.openable(
        session.row.id,
        {
          limit: Number(limit),
          ...(cursor ? { after: fromCursor(cursor) } : {}),
          ...(except ? { except } : {}),
        },
        new Date(context.clock.now()),
      );
      return { messages: page.messages, next: page.next ? toCursor(page.next) : null };
    },
  );

  app.get(
    '/v1/message/attachments/:n',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.reading,
        summary: 'Download one attachment of the sealed message (index from GET /v1/message)',
        params: Type.Object({ n: Type.String({ pattern: '^(0|[1-9][0-9]{0,3})$' }) }),
        response: errorResponses(401, 404, 410, 502),
      },
    },
    async (request, reply) => {
      const session = await requireSignedIn(request, context.access, request.query.messageId);
      // One request to B: its content answer says 404 when the message is gone, 410 when it ended.
      const { stream } = await context.seal
        .contentStream(session.messageId, session.email)
        // The broken seal's CID, for a reader who opened the link to the file directly.
        .catch(async (error: unknown) =>
          afterEnd(request, context, session, await withBrokenSealCid(error, session.messageId)),
        );
      const attachment = await findAttachment(stream, Number(request.params.n)).catch(unreadable);
      if (!attachment) throw notFound('No attachment with this index');
      context.trail.report(
        session.messageId,
        {
          event: 'attachment_downloaded',
          recipient: session.email,
          client: context.trail.client(request),
          detail: { attachment: attachment.filename },
        },
        request.log,
      );
      // Served from our origin, a sender's HTML or SVG must never render here: always a download, no sniffing.
      // No Content-Length: the decoded size is known only at the part's end; chunked encoding lets a
      // download that breaks off show as broken, not as a shorter file.
      return reply
        .header('content-type', attachment.contentType)
        .header('content-disposition', contentDisposition(attachment.filename))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .send(attachment.content);
    },
  );
}

/**
 * A page's end as the client carries it: the last entry's sealedAt (epoch milliseconds) and id. Opaque to the
 * client, checked by the pattern; a cursor names a place in the list, never what the session may open.
 */
const CURSOR = /^(\d{1,15})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

const MessagesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'entries on the page (1 to 100, default 20)' }),
    ),
    cursor: Type.Optional(
      Type.String({ pattern: CURSOR.source, description: 'the page after the one whose `next` this is' }),
    ),
    except: Type.Optional(
      Type.String({ pattern: MESSAGE_ID_PATTERN, description: 'a message to leave out: the one the page shows' }),
    ),
  },
  { additionalProperties: false },
);

const toCursor = (position: ListPosition) => `${Date.parse(position.sealedAt)}.${position.id}`;

function fromCursor(cursor: string): ListPosition {
  const [, ms, id] = CURSOR.exec(cursor)!;
  const at = new Date(Number(ms));
  if (Number.isNaN(at.getTime())) throw new AppError('validation_failed', 400, 'cursor: not a place in the list');
  return { sealedAt: at.toISOString(), id: id! };
}

/**
 * Verified content that the MIME parser refuses (e.g. a header block over its size limit), or that broke
 * off on its way from the seal service, cannot be shown: a 502 like other content that cannot be shown,
 * not a 500 (found by test/security/oversized-headers).
 */
function unreadable(error: unknown): never {
  if (error instanceof AppError) throw error;
  throw new AppError('upstream_failed', 502, `The sealed message cannot be shown: ${(error as Error).message}`, {
    cause: error,
  });
}

/** RFC 6266: an ASCII fallback name and the exact name in UTF-8 (RFC 8187). */
function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  // encodeURIComponent leaves ' ( ) * as they are; RFC 8187's attr-char does not allow them.
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
