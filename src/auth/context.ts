import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Clock } from '../kernel/clock.ts';
import { AppError } from '../kernel/errors.ts';
import type { DraftAttachments } from './attachments/upload.ts';
import type { PendingCodes } from './codes/pending-codes.ts';
import type { RefusalLimit, SendLimit } from './codes/limits.ts';
import type { AuthMetrics } from './metrics.ts';
import type { DraftStore, ExpectedVersion } from './drafts/store.ts';
import type { EndedDrafts } from './drafts/ended.ts';
import type { SignInMethod } from './methods/method.ts';
import type { SealClient } from './seal/client.ts';
import { emailKey, type RecipientDirectory } from './seal/recipients.ts';
import { isEnded } from './seal/end.ts';
import type { MobileChangeNotices } from './mobile/notices.ts';
import type { MessageAccess } from './sessions/access.ts';
import type { SessionCookie } from './sessions/cookie.ts';
import type { SessionStore } from './sessions/store.ts';
import type { AuthKeys } from './secret.ts';
import type { SessionRow, SignInMethodName } from './tables.ts';
import type { TrailReporter } from './trail/reporter.ts';

/** Everything the auth routes use, built once by the service (service.ts) and passed to the plugin. */
export interface AuthContext {
  /** The time every route goes by (code expiry, session timeouts, limits, drafts). */
  clock: Clock;
  metrics: AuthMetrics;
  sessions: SessionStore;
  codes: PendingCodes;
  /** Code sends per destination and client, and refused code requests per client and message. */
  sendLimit: SendLimit;
  refusalLimit: RefusalLimit;
  seal: SealClient;
  recipients: RecipientDirectory;
  /** Which sealed messages a session opens with what it has proven. */
  access: MessageAccess;
  /** Tells the old number and the address of a mobile change. */
  mobileNotices: MobileChangeNotices;
  methods: Record<SignInMethodName, SignInMethod>;
  cookie: SessionCookie;
  keys: AuthKeys;
  trustProxyHops: number;
  /** Replying: drafts, their files (upload checks, object store) and sending through the exchange engine. */
  drafts: DraftStore;
  /** Deletes the drafts of messages that ended: by the watcher, and at once when a request meets the end. */
  endedDrafts: EndedDrafts;
  attachments: DraftAttachments;
  replies: ReplySending;
  /** What the routes see of a sealed message, reported to the seal service's trail (and NOTIFY_SENDER_ON). */
  trail: TrailReporter;
  /** INBOUND_SMTP_SENDER_DOMAINS: only addresses there (or below) get a sender's code; undefined: any. */
  senderDomains: string[] | undefined;
  /** Numbers the reader page shows (GET /v1/config), in seconds where they are times. */
  settings: {
    codeExpiresInSeconds: number;
    maxAttempts: number;
    rememberMeMaxAgeSeconds: number;
    limits: { perNumberIntervalSeconds: number; perNumberHourly: number; perIpHourly: number };
    /** READER_SUBJECT_BEFORE_SIGN_IN: GET /v1/config names the subject before sign-in. */
    subjectBeforeSignIn: boolean;
    /** ATTACHMENT_MAX_SIZE and REPLY_MAX_TOTAL_SIZE in bytes; ATTACHMENTS_RETENTION_PERIOD in ms. */
    attachments: { maxFileSize: number; maxTotalSize: number; retentionMs: number };
  };
}

/** The session a request came with (cookie → live row), or null. */
export interface LoadedSession {
  row: SessionRow;
  /** The cookie's token: the CSRF token is derived from it. Never logged. */
  token: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    readerSession: LoadedSession | null;
  }
}

/** A session signed in for a message; 401 otherwise. */
export interface SignedInSession extends LoadedSession {
  messageId: string;
  email: string;
}

export interface ReplyInput {
  text: string;
  html?: string;
  bcc?: string;
}

export interface SentReply {
  envelopeId: string;
  messageId: string;
  files: number;
  /** The reply's version after it was marked sent (for the ETag header). */
  version?: number;
}

/**
 * Sending a reply, as the routes call it. Declared here rather than taken from its class
 * (replies/send.ts) because the sender works on a SignedInSession: the feature depends on the context,
 * never the reverse.
 */
export interface ReplySending {
  send(
    session: SignedInSession,
    input: ReplyInput,
    log: FastifyBaseLogger,
    expected?: ExpectedVersion,
  ): Promise<SentReply>;
}

export async function requireSignedIn(
  request: FastifyRequest,
  access: MessageAccess,
  messageId?: string,
): Promise<SignedInSession> {
  const session = request.readerSession;
  // Without an id, the message the session signed in for last (clients before ids were named).
  const id = messageId ?? session?.row.message_id;
  if (!session || !id) throw new AppError('unauthenticated', 401, 'Not signed in: request a code and sign in first');
  const lastSignIn = session.row.message_id === id && session.row.email ? { email: session.row.email } : undefined;
  const as = lastSignIn ?? (await access.open(session.row.id, id));
  if (!as)
    throw new AppError('unauthenticated', 401, 'Not signed in for this message: request a code and sign in first');
  return { ...session, messageId: id, email: as.email };
}

/**
 * requireSignedIn, and the message not ended for that recipient, asked of the seal service now
 * (docs/specification.md#end-dates): a withdrawal for one recipient ends their open sessions at once, so no grant
 * or cached session may stand for B's answer. For the requests that do not read the content anyway (which B
 * checks itself, with the reader named): the reply and its files, the mobile change.
 */
export async function requireOpen(
  request: FastifyRequest,
  context: Pick<AuthContext, 'access' | 'seal' | 'endedDrafts'>,
  messageId?: string,
): Promise<SignedInSession> {
  const session = await requireSignedIn(request, context.access, messageId);
  const recipient = await context.seal
    .recipient(session.messageId, session.email)
    .catch((error: unknown) => afterEnd(request, context, session, error));
  if (!recipient) throw new AppError('not_found', 404, 'The sealed message is no longer available');
  return session;
}

/**
 * A request met the end of the session's message: the reader's reply draft goes at once (the watcher takes the
 * drafts of a message ended for everyone too), and the error is thrown on. Any other error is thrown as it is.
 */
export async function afterEnd(
  request: FastifyRequest,
  context: Pick<AuthContext, 'endedDrafts'>,
  session: SignedInSession,
  error: unknown,
): Promise<never> {
  if (isEnded(error)) await context.endedDrafts.deleteAfterEnd(session.messageId, emailKey(session.email), request.log);
  throw error;
}
