/**
 * The auth service's API as the reader page uses it; the transport (the session cookie, the CSRF token,
 * failures as ApiError values) is client.ts's.
 */

import type { Static } from 'typebox';
import { ApiError } from './api-error.ts';
import { apiError, isObject, JsonClient, parseJson, versionOf } from './client.ts';
import type { MessageResponse } from '../../src/contracts/auth.ts';
import type { SignInMethodName } from '../../src/contracts/seal.ts';

export type Method = SignInMethodName;

export interface ReaderConfig {
  messageId?: string;
  methods?: Method[];
  /** The sealed message's sender, shown before sign-in; its subject only when READER_SUBJECT_BEFORE_SIGN_IN is set. */
  sender?: string;
  subject?: string;
  /** The message ended for everyone: a final state, no sign-in (the sender is whom to ask; no subject then). */
  ended?: { reason: 'expired' | 'withdrawn'; at: string };
  signedIn: boolean;
  /** The signed-in recipient's address (when signedIn). */
  email?: string;
  /** How that recipient signs in to this message (when signedIn): `sms` can change the number. */
  method?: Method;
  /** Not signed in, and this session was sent a code for this message that can still be tried (a reload). */
  codePending?: CodePending;
  /** Not signed in, and the code this session was last sent for this message can no longer be tried (a reload). */
  codeGone?: CodeGone;
  codeLength: number;
  codeExpiresIn: number;
  maxAttempts: number;
  rememberMeMaxAge: number;
  limits: { perNumberInterval: number; perNumberHourly: number; perIpHourly: number };
}

/** How the message ended, as the reader page tells it: when (`at`), and whom to ask (`contact`, the sender). */
export interface MessageEnd {
  reason: 'expired' | 'withdrawn';
  at?: string;
  contact?: string;
}

export interface CodePending {
  method: Method;
  /** Masked: +41*******67, a***@example.com. */
  destination: string;
  email: string;
  sentAt: string;
  /** Seconds the code stays valid from when the config was read. */
  expiresIn: number;
  /** Wrong tries left before the code is void. */
  attemptsLeft?: number;
}

/** The last code sent, that can no longer be tried: expired, or voided by wrong tries. */
export interface CodeGone {
  reason: 'expired' | 'voided';
  method: Method;
  destination: string;
  email: string;
  sentAt: string;
}

export interface CodeSent {
  method: Method;
  codeLength: number;
  expiresIn: number;
}

export interface SignedIn {
  signedIn: true;
  messageId: string;
  email: string;
  method: Method;
  rememberMe: boolean;
  expiresAt: string;
}

// The server's response schema is the one definition of the message; a type-only import, so the
// bundle takes nothing from the server's code.
export type SealedMessage = Static<typeof MessageResponse>;
export type Address = SealedMessage['from'][number];
export type MessageAttachment = SealedMessage['attachments'][number];

export interface DraftFile {
  id: string;
  name: string;
  size: number;
  type?: string;
}

export interface Draft {
  files: DraftFile[];
  text: string;
  /** The copy-to-self address saved with the draft. */
  bcc?: string;
  /**
   * ATTACHMENT_MAX_SIZE and REPLY_MAX_TOTAL_SIZE in bytes, from GET /v1/message/files (the only answer that says them).
   */
  maxFileSize?: number;
  maxTotalSize?: number;
  /**
   * The draft's version (raised by every change, here or in another window); every change sends it back
   * in If-Match and is refused with draft_conflict when the draft has moved on. Undefined: the service
   * did not say, and changes go without.
   */
  version?: number;
  /** When a reply to this message was last sent, from any window or device. */
  lastSentAt?: string;
}

export class Api extends JsonClient {
  /** `messageId`: the page's sealed message, which every request about a message names. */
  constructor(
    private readonly messageId: string,
    base = '',
  ) {
    super(base);
  }

  /** The path with this page's message named (a session may open several). */
  private about(path: string): string {
    return `${path}${path.includes('?') ? '&' : '?'}messageId=${encodeURIComponent(this.messageId)}`;
  }

  /** A mobile change, step one: a code goes to the current number. */
  changeMobile(mobile: string): Promise<MobileStep> {
    return this.json('PUT', this.about('/v1/mobile'), { mobile });
  }

  /** The code of the step under way: the next step (a code to the new number), or the number changed. */
  confirmMobile(code: string): Promise<MobileStep | { mobile: string }> {
    return this.json('POST', this.about('/v1/mobile/verify'), { code });
  }

  /** A recipient who signs in by email adds a number for their later messages: a code goes to it. */
  addLaterMobile(mobile: string): Promise<{ to: string; codeLength: number; expiresIn: number }> {
    return this.json('PUT', this.about('/v1/mobile/later'), { mobile });
  }

  /** The code sent to the number to add: from now on it protects the recipient's later messages. */
  confirmLaterMobile(code: string): Promise<{ mobile: string; appliesTo: 'later' }> {
    return this.json('POST', this.about('/v1/mobile/later/verify'), { code });
  }

  /**
   * One page of the other sealed messages this session opens without a code, newest first (this page's message
   * left out): the page after `cursor`, and the cursor of the next one when there is more.
   */
  async messages(cursor?: string): Promise<MessagePage> {
    const query = new URLSearchParams({ limit: String(LIST_PAGE_SIZE), except: this.messageId });
    if (cursor) query.set('cursor', cursor);
    const body = await this.json<{ messages?: unknown; next?: unknown }>('GET', `/v1/messages?${query}`);
    return {
      messages: Array.isArray(body.messages) ? (body.messages as OpenableMessage[]) : [],
      ...(typeof body.next === 'string' ? { next: body.next } : {}),
    };
  }

  config(messageId: string): Promise<ReaderConfig> {
    return this.json('GET', `/v1/config?messageId=${encodeURIComponent(messageId)}`);
  }

  requestCode(body: { messageId: string; email: string; mobile?: string; method: Method }): Promise<CodeSent> {
    return this.json('POST', '/v1/auth/code', body);
  }

  /** A new code to where the session's last code went (after a reload the page does not know the number). */
  resendCode(messageId: string): Promise<CodeSent> {
    return this.json('POST', '/v1/auth/code/resend', { messageId });
  }

  verify(code: string, rememberMe: boolean): Promise<SignedIn> {
    return this.json('POST', '/v1/auth/verify', { code, rememberMe });
  }

  message(options: { remoteImages?: boolean } = {}): Promise<SealedMessage> {
    return this.json('GET', this.about(options.remoteImages ? '/v1/message?images=remote' : '/v1/message'));
  }

  attachmentUrl(index: number): string {
    return `${this.base}${this.about(`/v1/message/attachments/${index}`)}`;
  }

  /**
   * The draft reply: its files and the limits (GET /v1/message/files, which also renews the CSRF token),
   * and its text and copy address (GET /v1/message/reply). The draft belongs to the recipient, so it
   * is the same on every device they sign in on.
   */
  async draft(): Promise<Draft> {
    const listing = await this.json<Record<string, unknown>>('GET', this.about('/v1/message/files'));
    const { body: reply, version } = await this.request<Record<string, unknown>>(
      'GET',
      this.about('/v1/message/reply'),
    );
    // The files from the same answer as the version (which the service reads first): a file added in
    // between cannot be missing from the page while its version already counts it.
    const listed = Array.isArray(reply.files) ? reply.files : Array.isArray(listing.files) ? listing.files : [];
    const limits = isObject(listing.limits) ? listing.limits : {};
    return {
      files: (listed as unknown[]).map((file) => toDraftFile(file)),
      text: typeof reply.text === 'string' ? reply.text : '',
      ...(typeof reply.bcc === 'string' && reply.bcc ? { bcc: reply.bcc } : {}),
      maxFileSize: numberOr(limits.maxFileSize),
      maxTotalSize: numberOr(limits.maxTotalSize),
      version: numberOr(reply.version) ?? version,
      ...(typeof reply.lastSentAt === 'string' ? { lastSentAt: reply.lastSentAt } : {}),
    };
  }

  /** Saves the text against `version`; answers the new version. */
  async saveDraft(draft: { text: string; bcc?: string }, version?: number): Promise<number | undefined> {
    return (await this.request('PUT', this.about('/v1/message/reply'), draft, version)).version;
  }

  /** Answers the new version. */
  async removeFile(id: string, version?: number): Promise<number | undefined> {
    return (await this.request('DELETE', this.about(`/v1/message/files/${encodeURIComponent(id)}`), undefined, version))
      .version;
  }

  async sendReply(body: { text: string; bcc?: string }, version?: number): Promise<unknown> {
    return (await this.request('POST', this.about('/v1/message/reply'), body, version)).body;
  }

  logout(): Promise<unknown> {
    return this.json('GET', '/logout');
  }

  /** Ends every session that proved one of this session's addresses, this one included. */
  signOutEverywhere(): Promise<unknown> {
    return this.json('POST', '/v1/auth/sign-out-everywhere');
  }

  /**
   * One file as multipart, through XMLHttpRequest: fetch() has no upload progress. `onProgress` gets
   * the fraction sent (0..1); `signal` aborts.
   */
  uploadFile(
    file: File,
    onProgress: (fraction: number) => void,
    options: { signal?: AbortSignal; version?: number } = {},
  ): Promise<{ file: DraftFile; version: number | undefined }> {
    const { signal, version } = options;
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', `${this.base}${this.about('/v1/message/files')}`);
      xhr.setRequestHeader('accept', 'application/json');
      if (this.csrf) xhr.setRequestHeader('x-csrf-token', this.csrf);
      if (version !== undefined) xhr.setRequestHeader('if-match', `"${version}"`);
      xhr.upload.addEventListener('progress', (event) => {
        if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
      });
      xhr.addEventListener('load', () => {
        const token = xhr.getResponseHeader('x-csrf-token');
        if (token) this.csrf = token;
        const body = parseJson(xhr.responseText);
        if (xhr.status >= 200 && xhr.status < 300) {
          onProgress(1);
          resolve({
            file: toDraftFile(isObject(body) && isObject(body.file) ? body.file : body, file),
            version: versionOf(xhr.getResponseHeader('etag')),
          });
        } else {
          reject(apiError(xhr.status, body, xhr.getResponseHeader('retry-after'), xhr.getResponseHeader('etag')));
        }
      });
      xhr.addEventListener('error', () => reject(new ApiError(0, undefined, undefined, undefined, 'network error')));
      xhr.addEventListener('abort', () => reject(new DOMException('upload cancelled', 'AbortError')));
      signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      const form = new FormData();
      form.append('file', file, file.name);
      xhr.send(form);
    });
  }
}

function toDraftFile(value: unknown, file?: File): DraftFile {
  const object = isObject(value) ? value : {};
  const name = [object.name, object.filename, file?.name].find((v): v is string => typeof v === 'string') ?? 'file';
  const size = [object.size, file?.size].find((v): v is number => typeof v === 'number') ?? 0;
  const type = [object.contentType, object.detectedType, object.type].find((v): v is string => typeof v === 'string');
  return { id: String(object.id ?? ''), name, size, ...(type ? { type } : {}) };
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** What the sign-in form asks a code for (POST /v1/auth/code). */
export interface CodeRequest {
  messageId: string;
  email: string;
  mobile?: string;
  method: Method;
}

/** How many of the reader's other messages a page of the list shows. */
export const LIST_PAGE_SIZE = 20;

/** A page of GET /v1/messages: its messages, and the cursor of the next page when there is one. */
export interface MessagePage {
  messages: OpenableMessage[];
  next?: string;
}

/** One sealed message in the list of those the session opens (GET /v1/messages). */
export interface OpenableMessage {
  id: string;
  sender: string;
  subject: string;
  sealedAt: string;
}

/** A step of a mobile change: which number the code just sent went to (masked). */
export interface MobileStep {
  step: 'current' | 'new';
  to: string;
  codeLength: number;
  expiresIn: number;
}
