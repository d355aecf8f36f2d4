import type { IncomingMessage } from 'node:http';
import multipart from '@fastify/multipart';
import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import { requireOpen, type AuthContext, type SignedInSession } from '../context.ts';
import { MessageQuery } from '../message/query.ts';
import { emailKey } from '../seal/recipients.ts';
import { sessionCsrfToken } from '../sessions/csrf.ts';
import { IfMatchHeaders, VERSION_NOTE, expectedVersion, setVersion } from './draft-version.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';

export const FileSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String({ description: 'the file name as uploaded, without any path' }),
  size: Type.Integer({ description: 'bytes' }),
  contentType: Type.String({
    description: 'the Content-Type the reply carries: the detected type, else one guessed from the name',
  }),
  detectedType: Type.Union([Type.String(), Type.Null()], {
    description: "the MIME type found in the content's magic bytes; null when none matched",
  }),
  scanned: Type.Boolean({
    description: 'scanned by clamd and found clean (false when scanning is off or clamd was down and not required)',
  }),
  createdAt: Type.String({ format: 'date-time' }),
});

const Listing = Type.Object({
  files: Type.Array(FileSchema),
  totalSize: Type.Integer({ description: 'bytes of all files together' }),
  limits: Type.Object({
    maxFileSize: Type.Integer({ description: 'ATTACHMENT_MAX_SIZE, bytes' }),
    maxTotalSize: Type.Integer({ description: 'REPLY_MAX_TOTAL_SIZE, bytes' }),
  }),
});

export const draftOwner = (session: SignedInSession) => ({
  messageId: session.messageId,
  emailKey: emailKey(session.email),
});

/**
 * The draft reply's files (GET /v1/message/files also issues the CSRF token: docs/specification.md#csrf).
 * Uploads are multipart with one file per request, streamed through the checks into the object store
 * (src/auth/attachments/upload.ts).
 */
export async function filesRoutes(
  app: App,
  context: Pick<AuthContext, 'settings' | 'access' | 'seal' | 'endedDrafts' | 'keys' | 'attachments'>,
) {
  const { maxFileSize, maxTotalSize } = context.settings.attachments;
  // Here only (encapsulated): the other routes keep taking JSON alone (bodies are JSON:
  // docs/specification.md#paths-and-versions).
  await app.register(multipart, {
    // busboy's own cap sits one byte past ours, so our counter sees the excess and names it file_too_large.
    limits: { fileSize: maxFileSize + 1, files: 1, fields: 10, fieldSize: 1024, parts: 11, headerPairs: 100 },
  });

  app.get(
    '/v1/message/files',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.replying,
        summary: "The draft reply's uploaded files; the X-CSRF-Token header carries the CSRF token",
        description:
          'The draft belongs to the sealed message and the recipient, ' +
          'not the session: it is the same after signing in on another device.',
        response: { 200: Listing, ...errorResponses(401, 410) },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      reply.header('x-csrf-token', sessionCsrfToken(context.keys.csrfKey, session));
      const files = await context.attachments.list(draftOwner(session));
      return {
        files,
        totalSize: files.reduce((sum, file) => sum + file.size, 0),
        limits: { maxFileSize, maxTotalSize },
      };
    },
  );

  app.post(
    '/v1/message/files',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.replying,
        summary: 'Upload one file to the draft reply (multipart/form-data, one file per request)',
        description:
          'The file is streamed to storage and checked on the way: file_too_large (403) past ATTACHMENT_MAX_SIZE, ' +
          "as soon as that many bytes have arrived; upload_limit_reached (403) when the draft's files would " +
          'pass REPLY_MAX_TOTAL_SIZE; forbidden_file_type (403) for a type on ATTACHMENT_FORBIDDEN_TYPES, ' +
          "decided from the content's magic bytes and the name (never the Content-Type sent); " +
          'malware_detected (403) when clamd finds something; 503 when the scan is required and clamd is down. ' +
          `Nothing of a refused file is kept. ${VERSION_NOTE} The version is checked before the file ` +
          "is read and again when it is stored; the answer's ETag header carries the new version. " +
          CSRF_NOTE,
        consumes: ['multipart/form-data'],
        headers: IfMatchHeaders,
        body: Type.Object({ file: Type.String({ format: 'binary', description: 'the file; one per request' }) }),
        response: { 201: FileSchema, ...errorResponses(400, 401, 403, 409, 410, 503) },
      },
      // The body schema only describes the form for the OpenAPI document: the body is a stream read by
      // the handler (request.file()), there is nothing parsed to validate beforehand.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const expected = expectedVersion(request);
      if (!request.isMultipart()) throw new AppError('validation_failed', 415, 'Send the file as multipart/form-data');
      const part = await withinProgress(request.raw, request.file()).catch((error: unknown) => {
        if (error instanceof AppError) {
          void reply.header('connection', 'close');
          stopReading(request.raw);
          throw error;
        }
        // busboy refuses a malformed form (no boundary, a broken part header) with plain Errors: the
        // client's mistake, a 400, not a 500. @fastify/multipart's own limit errors carry their status.
        if (typeof (error as { statusCode?: unknown }).statusCode === 'number') throw error;
        throw new AppError(
          'validation_failed',
          400,
          `The upload is not valid multipart/form-data: ${(error as Error).message}`,
          { cause: error },
        );
      });
      if (!part) throw new AppError('validation_failed', 400, 'The request holds no file');
      let stopped = false;
      const refused = () => {
        if (stopped || request.raw.readableEnded) return;
        stopped = true;
        stopReading(request.raw);
      };
      try {
        const { file, version } = await context.attachments.upload(
          draftOwner(session),
          { filename: part.filename, file: part.file, refused },
          request.log,
          expected,
        );
        if (request.raw.socket?.destroyed) {
          // The connection ended while the file was being stored (the client left, or its body broke off
          // and was answered 400): nobody will learn the file was kept, so it is not (a retry would add
          // it twice). Found by test/fuzz/multipart-uploads.
          await context.attachments.remove(draftOwner(session), file.id);
          throw new AppError(
            'validation_failed',
            400,
            'The connection ended before the upload could be answered; the file was not kept',
          );
        }
        setVersion(reply, version);
        return await reply.code(201).send(file);
      } catch (error) {
        refused();
        throw error;
      }
    },
  );

  app.delete(
    '/v1/message/files/:id',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.replying,
        summary: 'Remove a file from the draft reply (the stored object and its record)',
        description: `${VERSION_NOTE} The answer's ETag header carries the new version. ${CSRF_NOTE}`,
        headers: IfMatchHeaders,
        params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
        response: { 204: Type.Null(), ...errorResponses(401, 404, 409, 410, 503) },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      setVersion(
        reply,
        await context.attachments.remove(draftOwner(session), request.params.id, expectedVersion(request)),
      );
      return reply.code(204).send(null);
    },
  );
}

/** How long the form may go without a byte read from the connection before its file part is found. */
const STALL_MS = 10_000;

/**
 * `found`, unless the request stops making progress first: no byte read from the connection for
 * STALL_MS, whether the client stopped sending or the multipart parser stopped reading. The latter
 * happens: @fastify/busboy 3.2 stalls for good on a part header block of more than 64 KiB with bare-LF
 * line ends followed by a part of more than 16 KiB (found by test/fuzz/multipart-uploads), and Fastify
 * sets no request timeout, so the request would otherwise hang until the client gave up.
 */
async function withinProgress<T>(raw: IncomingMessage, found: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    let bytes = raw.socket?.bytesRead ?? 0;
    let since = Date.now();
    timer = setInterval(() => {
      const now = raw.socket?.bytesRead ?? 0;
      if (now !== bytes) {
        bytes = now;
        since = Date.now();
      } else if (Date.now() - since >= STALL_MS) {
        reject(
          new AppError(
            undefined,
            408,
            `The upload made no progress for ${STALL_MS / 1000} s before its file part; send it again`,
          ),
        );
      }
    }, 500);
    timer.unref();
  });
  try {
    return await Promise.race([found, stalled]);
  } finally {
    clearInterval(timer);
  }
}

/** How long a refused upload's client has to read the answer and stop sending before the connection is closed. */
const LINGER_MS = 2000;

/**
 * A refused upload is usually refused before its body has all arrived, and the answer goes out at once.
 * The rest is not read: the client, which reads the answer while it sends (browsers do), stops sending
 * and closes; TCP flow control holds it back meanwhile. Closing our side at once could send a TCP RST
 * that wipes the answer from the client's buffer (a network error instead of file_too_large), so the
 * connection is only closed under a client that is still there after a moment.
 */
function stopReading(raw: IncomingMessage) {
  raw.unpipe();
  raw.pause();
  const timer = setTimeout(() => raw.socket?.destroy(), LINGER_MS);
  timer.unref();
  raw.socket?.once('close', () => clearTimeout(timer));
}
