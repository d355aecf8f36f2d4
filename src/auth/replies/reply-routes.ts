import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import { fileView } from '../attachments/upload.ts';
import { requireOpen, type AuthContext } from '../context.ts';
import { MessageQuery } from '../message/query.ts';
import { CSRF_NOTE, TAGS, errorResponses } from '../route-docs.ts';
import { IfMatchHeaders, VERSION_NOTE, expectedVersion, setVersion } from './draft-version.ts';
import { FileSchema, draftOwner } from './files-routes.ts';
import type { DraftRow } from '../tables.ts';

/**
 * Bodies are bounded by the service's JSON body limit (1 MiB); the text fields need no limit of their own.
 * The bcc's content (its length included) is checked when sending, so that every bad address gets
 * invalid_bcc_address; a bcc that is not a string at all is a malformed request (validation_failed).
 */
const ReplyBody = Type.Object(
  {
    text: Type.String({ description: 'plain-text body' }),
    html: Type.Optional(
      Type.String({
        description:
          'HTML body, sent beside the text after the same sanitising as the message shown ' +
          '(no scripts, styles, frames, forms or event handlers)',
      }),
    ),
    bcc: Type.Optional(
      Type.String({
        description:
          "a copy to oneself: must be the signed-in recipient's own address. Checked when sending: " +
          'invalid_bcc_address (400) when it is not an address (longer than 320 characters included), ' +
          'email_mismatch (403) when it is another address; a bcc that is not a string is validation_failed (400)',
      }),
    ),
  },
  { additionalProperties: false },
);

const Draft = Type.Object({
  text: Type.String(),
  html: Type.Union([Type.String(), Type.Null()]),
  bcc: Type.Union([Type.String(), Type.Null()]),
  files: Type.Array(FileSchema),
  version: Type.Integer({
    minimum: 0,
    description:
      'raised by every change (text saved, file added or removed, sent); ' +
      'send it back in If-Match with the next change (also in the ETag header)',
  }),
  updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'last change; null when nothing was saved yet',
  }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description:
      'from then on the watcher may delete the draft and its files (last change + ATTACHMENTS_RETENTION_PERIOD)',
  }),
  lastSentAt: Type.Optional(
    Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'GET: when a reply to this message was last sent, from any window or device; null when never',
    }),
  ),
});

/**
 * The reply to the sealed message: one draft per message and recipient (so another device, signed in
 * as the same recipient, continues it), saved with PUT and sent with POST.
 */
export async function replyRoutes(
  app: App,
  context: Pick<AuthContext, 'clock' | 'settings' | 'drafts' | 'access' | 'seal' | 'endedDrafts' | 'replies' | 'trail'>,
) {
  const retentionMs = context.settings.attachments.retentionMs;
  /** A stored draft as the API shows it: its files, and when it expires unless changed again. */
  const draftView = async (draft: DraftRow, version: number) => ({
    text: draft.text,
    html: draft.html,
    bcc: draft.bcc,
    files: (await context.drafts.files(draft.id)).map(fileView),
    version,
    updatedAt: draft.updated_at.toISOString(),
    expiresAt: new Date(draft.updated_at.getTime() + retentionMs).toISOString(),
  });

  app.get(
    '/v1/message/reply',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.replying,
        summary: 'The draft reply: text, html, bcc, files and version',
        description:
          'The version is also in the ETag header. It is read before the rest: a change made meanwhile ' +
          'makes the next change a draft_conflict, never a change against content the client has not seen.',
        response: { 200: Draft, ...errorResponses(401, 410) },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const owner = draftOwner(session);
      const { version, sentAt } = await context.drafts.versionAndSent(owner);
      setVersion(reply, version);
      const lastSentAt = sentAt?.toISOString() ?? null;
      const draft = await context.drafts.findOpen(owner);
      if (!draft)
        return { text: '', html: null, bcc: null, files: [], version, updatedAt: null, expiresAt: null, lastSentAt };
      return { ...(await draftView(draft, version)), lastSentAt };
    },
  );

  app.put(
    '/v1/message/reply',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.replying,
        summary: 'Save the draft reply (text, html, bcc); starts the draft when there is none',
        description:
          "Saving moves the draft's last change, from which ATTACHMENTS_RETENTION_PERIOD counts. " +
          `The bcc is checked when sending. ${VERSION_NOTE} 409 conflict while the reply is being sent. ${CSRF_NOTE}`,
        headers: IfMatchHeaders,
        body: ReplyBody,
        response: { 200: Draft, ...errorResponses(400, 401, 403, 409, 410) },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const { text, html, bcc } = request.body;
      const saved = await context.drafts.save(
        draftOwner(session),
        { text, html: html ?? null, bcc: bcc ?? null },
        new Date(context.clock.now()),
        expectedVersion(request),
      );
      if (saved === 'sending')
        throw new AppError('conflict', 409, 'The reply is being sent right now; it cannot be changed');
      setVersion(reply, saved.version);
      return draftView(saved, saved.version);
    },
  );

  app.post(
    '/v1/message/reply',
    {
      schema: {
        querystring: MessageQuery,
        tags: TAGS.replying,
        summary: "Send the reply with the draft's files to the sender of the sealed message",
        description:
          'From the recipient, to the sealed message\'s sender, "Re: <subject>", In-Reply-To and References ' +
          "set to the sealed message, with the draft's files; submitted to the exchange engine as a JSON " +
          'message whose sender is the recipient (a rule with params {channel: json, sender} routes it). ' +
          'The text and html are saved to the draft first, so no refusal loses them. bcc: invalid_bcc_address ' +
          "(400) when malformed or longer than 320 characters, email_mismatch (403) when it is not the recipient's " +
          'own address (the draft keeps its earlier bcc then); it becomes an envelope recipient, not a header. ' +
          'On success (202) the draft and its files are deleted. On failure the draft (with the text sent) is kept: ' +
          '503 when the engine is unreachable or unavailable, 502 when it refused, upload_limit_reached ' +
          `(403) when the reply is larger than it accepts, 409 while the same draft is being sent. ${VERSION_NOTE} ` +
          'Sending is a change too: of two sends against the same version only one goes out, and a send against ' +
          'the version of a reply already sent is a reply_already_sent with its sentAt (no second reply leaves). ' +
          'Every answer after the text was saved, refusals and failures included, carries the new version in its ' +
          'ETag header. ' +
          CSRF_NOTE,
        headers: IfMatchHeaders,
        body: ReplyBody,
        response: {
          202: Type.Object({
            envelopeId: Type.String({
              description:
                "the exchange engine's id of the reply (its status: GET {EXCHANGE_URL}/v1/messages/{id}/status)",
            }),
            messageId: Type.String({ description: 'the Message-ID header of the reply' }),
            files: Type.Integer({ description: 'attachments sent' }),
          }),
          ...errorResponses(400, 401, 403, 409, 410, 502, 503),
        },
      },
    },
    async (request, reply) => {
      const session = await requireOpen(request, context, request.query.messageId);
      const { version, ...sent } = await context.replies.send(
        session,
        request.body,
        request.log,
        expectedVersion(request),
      );
      if (version !== undefined) setVersion(reply, version);
      const client = context.trail.client(request);
      context.trail.report(session.messageId, { event: 'reply_sent', recipient: session.email, client }, request.log);
      return reply.code(202).send(sent);
    },
  );
}
