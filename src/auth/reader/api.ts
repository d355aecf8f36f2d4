/**
 * The auth service's API as the reader page uses it (same origin, the session cookie rides along).
 * It keeps the CSRF token from the latest X-CSRF-Token response header and sends it on every POST, PUT
 * and DELETE (docs/specification.md#csrf). Failures become ApiError values, never raw bodies.
 */

import type { Static } from 'typebox';
import type { MessageResponse } from '../routes/message.ts';

export type Method = 'sms' | 'email';

export interface ReaderConfig {
  messageId?: string;
  methods?: Method[];
  /** The sealed message's sender and subject, shown before sign-in (the link is the key to them). */
  sender?: string;
  subject?: string;
  signedIn: boolean;
  /** The signed-in recipient's address (when signedIn). */
  email?: string;
  codeLength: number;
  codeExpiresIn: number;
  maxAttempts: number;
  rememberMeMaxAge: number;
  limits: { perNumberInterval: number; perNumberHourly: number; perIpHourly: number };
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
  /** ATTACHMENT_MAX_SIZE and REPLY_MAX_TOTAL_SIZE in bytes, from GET /v1/message/files (the only answer that says them). */
  maxFileSize?: number;
  maxTotalSize?: number;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: string | undefined,
    /** The error object's id, for a support request. */
    readonly errorId: string | undefined,
    /** From Retry-After, in seconds. */
    readonly retryAfter: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** No answer at all (offline, server down). */
  get network(): boolean {
    return this.status === 0;
  }
}

export class Api {
  private csrf: string | undefined;

  constructor(private readonly base = '') {}

  config(messageId: string): Promise<ReaderConfig> {
    return this.json('GET', `/v1/config?messageId=${encodeURIComponent(messageId)}`);
  }

  requestCode(body: { messageId: string; email: string; mobile?: string; method: Method }): Promise<CodeSent> {
    return this.json('POST', '/v1/auth/code', body);
  }

  verify(code: string, rememberMe: boolean): Promise<SignedIn> {
    return this.json('POST', '/v1/auth/verify', { code, rememberMe });
  }

  message(options: { remoteImages?: boolean } = {}): Promise<SealedMessage> {
    return this.json('GET', options.remoteImages ? '/v1/message?images=remote' : '/v1/message');
  }

  attachmentUrl(index: number): string {
    return `${this.base}/v1/message/attachments/${index}`;
  }

  /**
   * The draft reply: its files and the limits (GET /v1/message/files, which also renews the CSRF token),
   * and its text and copy address (GET /v1/message/reply). The draft belongs to the recipient, so it
   * is the same on every device they sign in on.
   */
  async draft(): Promise<Draft> {
    const listing = await this.json<Record<string, unknown>>('GET', '/v1/message/files');
    const reply = await this.json<Record<string, unknown>>('GET', '/v1/message/reply');
    const files = Array.isArray(listing.files) ? (listing.files as unknown[]).map((file) => toDraftFile(file)) : [];
    const limits = isObject(listing.limits) ? listing.limits : {};
    return {
      files,
      text: typeof reply.text === 'string' ? reply.text : '',
      ...(typeof reply.bcc === 'string' && reply.bcc ? { bcc: reply.bcc } : {}),
      maxFileSize: numberOr(limits.maxFileSize),
      maxTotalSize: numberOr(limits.maxTotalSize),
    };
  }

  saveDraft(draft: { text: string; bcc?: string }): Promise<unknown> {
    return this.json('PUT', '/v1/message/reply', draft);
  }

  removeFile(id: string): Promise<unknown> {
    return this.json('DELETE', `/v1/message/files/${encodeURIComponent(id)}`);
  }

  sendReply(body: { text: string; bcc?: string }): Promise<unknown> {
    return this.json('POST', '/v1/message/reply', body);
  }

  logout(): Promise<unknown> {
    return this.json('GET', '/logout');
  }

  /**
   * One file as multipart, through XMLHttpRequest: fetch() has no upload progress. `onProgress` gets
   * the fraction sent (0..1); `signal` aborts.
   */
  uploadFile(file: File, onProgress: (fraction: number) => void, signal?: AbortSignal): Promise<DraftFile> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', `${this.base}/v1/message/files`);
      xhr.setRequestHeader('accept', 'application/json');
      if (this.csrf) xhr.setRequestHeader('x-csrf-token', this.csrf);
      xhr.upload.addEventListener('progress', (event) => {
        if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
      });
      xhr.addEventListener('load', () => {
        const token = xhr.getResponseHeader('x-csrf-token');
        if (token) this.csrf = token;
        const body = parseJson(xhr.responseText);
        if (xhr.status >= 200 && xhr.status < 300) {
          onProgress(1);
          resolve(toDraftFile(isObject(body) && isObject(body.file) ? body.file : body, file));
        } else {
          reject(apiError(xhr.status, body, xhr.getResponseHeader('retry-after')));
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

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && this.csrf) headers['x-csrf-token'] = this.csrf;
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch {
      throw new ApiError(0, undefined, undefined, undefined, 'network error');
    }
    const token = response.headers.get('x-csrf-token');
    if (token) this.csrf = token;
    const text = await response.text().catch(() => '');
    const parsed = parseJson(text);
    if (!response.ok) throw apiError(response.status, parsed, response.headers.get('retry-after'));
    return parsed as T;
  }
}

function apiError(status: number, body: unknown, retryAfter: string | null): ApiError {
  const object = isObject(body) ? body : {};
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined;
  return new ApiError(
    status,
    typeof object.errorCode === 'string' ? object.errorCode : undefined,
    typeof object.id === 'string' ? object.id : undefined,
    seconds,
    typeof object.message === 'string' ? object.message : `HTTP ${status}`,
  );
}

function toDraftFile(value: unknown, file?: File): DraftFile {
  const object = isObject(value) ? value : {};
  const name = [object.name, object.filename, file?.name].find((v): v is string => typeof v === 'string') ?? 'file';
  const size = [object.size, file?.size].find((v): v is number => typeof v === 'number') ?? 0;
  const type = [object.contentType, object.detectedType, object.type].find((v): v is string => typeof v === 'string');
  return { id: String(object.id ?? ''), name, size, ...(type ? { type } : {}) };
}

function parseJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
