import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../kernel/clock.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { AppError } from '../../kernel/errors.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { DraftAttachments } from '../attachments/upload.ts';
import type { ReplyInput, ReplySending, SentReply, SignedInSession } from '../context.ts';
import type { DraftStore, ExpectedVersion } from '../drafts/store.ts';
import type { ExchangeClient } from '../exchange/client.ts';
import type { SealClient } from '../seal/client.ts';
import { emailKey, type RecipientDirectory } from '../seal/recipients.ts';
import { composeReply, originalHeaders } from './compose.ts';
import { replyIdentity, type ReplyFromSettings } from './identity.ts';

/**
 * Sending a reply (POST /v1/message/reply): the text is saved into the draft first, before anything is
 * checked, so whatever is refused or goes wrong after, nothing the reader wrote is lost (a refused bcc is
 * not saved: the draft keeps its earlier one); the draft is claimed so a second click cannot send it
 * twice; the reply is built and handed to the exchange engine as a JSON message whose envelope sender
 * is REPLY_FROM's address (identity.ts; with REPLY_FROM_RECIPIENT, the recipient's), which a reply rule
 * with `channel: json` and `sender` matches. Only once the engine
 * answered 202 is the draft marked sent and its files deleted.
 *
 * `expected` (If-Match) is the version the client has: the first save checks it, and every later step
 * (the bcc saved, the claim) checks the version the step before it gave, so a change from elsewhere at
 * any point stops the send with draft_conflict. Two sends against one version: the first save of one of
 * them raises it, the other's fails. A refusal or failure after the first save carries the version the
 * reply has then (ETag), so the client can send again without a conflict of its own making.
 */
export class ReplySender implements ReplySending {
  constructor(
    private readonly deps: {
      drafts: DraftStore;
      attachments: DraftAttachments;
      objects: ObjectStore;
      recipients: RecipientDirectory;
      seal: SealClient;
      exchange: ExchangeClient;
      /** REPLY_FROM and REPLY_FROM_RECIPIENT. */
      from: ReplyFromSettings;
      clock: Clock;
    },
  ) {}

  async send(
    session: SignedInSession,
    input: ReplyInput,
    log: FastifyBaseLogger,
    expected?: ExpectedVersion,
  ): Promise<SentReply> {
    const owner = { messageId: session.messageId, emailKey: emailKey(session.email) };
    const text = { text: input.text, html: input.html ?? null };
    const first = await this.deps.drafts.save(owner, text, new Date(this.deps.clock.now()), expected);
    if (first === 'sending') throw new AppError('conflict', 409, 'This reply is being sent already');
    const at = { version: first.version };
    try {
      return await this.sendSaved(session, input, log, owner, text, at);
    } catch (error) {
      if (error instanceof AppError) error.headers.etag = `"${at.version}"`;
      throw error;
    }
  }

  private async sendSaved(
    session: SignedInSession,
    input: ReplyInput,
    log: FastifyBaseLogger,
    owner: { messageId: string; emailKey: string },
    text: { text: string; html: string | null },
    /** The reply's version, kept up to date as each step raises it. */
    at: { version: number },
  ): Promise<SentReply> {
    const { drafts, attachments, objects, recipients, seal, exchange, clock } = this.deps;
    const bcc = checkBcc(input.bcc, session.email);

    const found = await recipients.find(session.messageId, session.email);
    if (!found) throw new AppError('unauthorized_user', 403, 'This recipient is no longer on record for this message');
    const to = normalizeEmail(found.record.sender);
    if (!to) throw new AppError('conflict', 409, 'The sealed message has no sender address a reply could go to');
    const recipientEmail = found.recipient.email;

    const saved = await drafts.save(owner, { ...text, bcc: input.bcc ?? null }, new Date(clock.now()), at.version);
    if (saved === 'sending') throw new AppError('conflict', 409, 'This reply is being sent already');
    at.version = saved.version;
    const claimed = await drafts.claimForSending(saved.id, new Date(clock.now()), at.version);
    if (claimed === false) throw new AppError('conflict', 409, 'This reply is being sent already');
    at.version = claimed;
    const draftId = saved.id;

    let sent: { envelopeId: string; messageId: string; files: number };
    try {
      const files = await drafts.files(draftId);
      const original = await originalHeaders(
        await seal.content(session.messageId, session.email),
        found.record.subject,
      );
      const identity = replyIdentity(
        { email: recipientEmail, name: original.names.get(recipientEmail.toLowerCase()) },
        this.deps.from,
      );
      const { messageId, stream } = composeReply({
        from: identity.from,
        ...(identity.replyTo ? { replyTo: identity.replyTo } : {}),
        to,
        original,
        text: input.text,
        ...(input.html !== undefined ? { html: input.html } : {}),
        attachments: files.map((file) => ({
          filename: file.filename,
          contentType: file.content_type,
          open: () => objects.get(file.object_key),
        })),
        date: new Date(clock.now()),
      });
      // The copy to oneself is an envelope recipient only: no Bcc header is written.
      const { envelopeId } = await exchange.submitRaw(
        { from: identity.envelopeFrom, to: [to], ...(bcc ? { bcc: [bcc] } : {}) },
        stream,
      );
      sent = { envelopeId, messageId, files: files.length };
    } catch (error) {
      await drafts
        .releaseSending(draftId)
        .catch((release: unknown) =>
          log.warn({ err: release, draftId }, 'could not release the send claim of a draft'),
        );
      throw error;
    }

    const version = await drafts.markSent(draftId, new Date(clock.now()));
    if (version !== undefined) at.version = version;
    log.info(
      { draftId, envelopeId: sent.envelopeId, files: sent.files, bcc: Boolean(bcc) },
      'reply handed to the exchange engine',
    );
    // What is left of a sent draft is the watcher's if this fails (it deletes sent drafts on its next run).
    await attachments
      .deleteDraft(draftId)
      .catch((error: unknown) =>
        log.warn({ err: error, draftId }, 'could not delete the sent draft yet; the watcher will'),
      );
    return { ...sent, version: at.version };
  }
}

/** The longest address RFC 5321 allows: a 64-character local part, @, a 255-character domain. */
const MAX_BCC_LENGTH = 320;

/**
 * The bcc of a reply is a copy to oneself (docs/specification.md#error-codes: email_mismatch when the
 * normalised bcc differs from the signed-in recipient's address). Empty means none. The length is checked
 * here, not in the body schema, so that an over-long address is answered as what it is: invalid_bcc_address.
 */
function checkBcc(bcc: string | undefined, recipient: string): string | undefined {
  if (bcc === undefined || bcc.trim() === '') return undefined;
  if (bcc.length > MAX_BCC_LENGTH) {
    throw new AppError(
      'invalid_bcc_address',
      400,
      `The bcc address is longer than ${MAX_BCC_LENGTH} characters; it cannot be a valid email address`,
    );
  }
  const normalized = normalizeEmail(bcc);
  if (!normalized) throw new AppError('invalid_bcc_address', 400, 'The bcc address is not a valid email address');
  if (emailKey(normalized) !== emailKey(recipient)) {
    throw new AppError('email_mismatch', 403, 'The bcc address must be your own address (a copy to yourself)');
  }
  return normalized;
}
