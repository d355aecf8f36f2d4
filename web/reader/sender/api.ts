import { isObject, JsonClient } from '../client.ts';

/**
 * The auth service's sender API as the sender's page uses it (docs/specification.md, "Auth endpoints for
 * senders"), on the reader's transport: the session cookie, the CSRF token of the latest answer, failures as
 * ApiError values.
 */

export interface SenderConfig {
  signedIn: boolean;
  /** The proven address, once signed in. */
  sender?: string;
  codeLength: number;
}

export interface SenderCodeSent {
  method: 'email';
  codeLength: number;
  expiresIn: number;
}

/** How a sealed message ended (B's SealEnd): expired, or withdrawn for everyone. */
export interface SealedEnd {
  reason: 'expired' | 'withdrawn';
  at: string;
  note?: string;
}

/** What one recipient did with a message, the counts and times derived from the trail. */
export interface RecipientStatus {
  email: string;
  /** How they sign in (absent from a seal service before it said so). */
  method?: 'sms' | 'email';
  /** Where their mobile number came from: the sender's header, their own confirmation, the directory. */
  mobileSource?: 'header' | 'confirmed' | 'directory';
  withdrawnAt?: string;
  notifiedAt?: string;
  firstOpenedAt?: string;
  lastOpenedAt?: string;
  failedSignIns: number;
  downloads: number;
  replies: number;
}

/** A message entry of the spec: one of the sender's sealed messages. */
export interface SentMessage {
  id: string;
  subject: string;
  sealedAt: string;
  expiresAt?: string;
  end?: SealedEnd;
  recipients: RecipientStatus[];
}

/** Messages asked for at once; a page this full may have older ones after it. */
export const PAGE_SIZE = 20;

export class SenderApi extends JsonClient {
  config(): Promise<SenderConfig> {
    return this.json('GET', '/v1/sender/config');
  }

  requestCode(email: string): Promise<SenderCodeSent> {
    return this.json('POST', '/v1/sender/code', { email });
  }

  verify(code: string): Promise<{ sender: string }> {
    return this.json('POST', '/v1/sender/verify', { code });
  }

  /** Newest first; `before` is the last `sealedAt` of the page before, `q` a text in a recipient or the subject. */
  async sealed(options: { before?: string; q?: string } = {}): Promise<SentMessage[]> {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (options.before) query.set('before', options.before);
    if (options.q) query.set('q', options.q);
    const body = await this.json<unknown>('GET', `/v1/sender/sealed?${query}`);
    return listOf(body);
  }

  message(id: string): Promise<SentMessage> {
    return this.json('GET', `/v1/sender/sealed/${encodeURIComponent(id)}`);
  }

  withdraw(id: string, reason: string, recipient?: string): Promise<unknown> {
    return this.json('POST', `/v1/sender/sealed/${encodeURIComponent(id)}/withdraw`, {
      reason,
      ...(recipient ? { recipient } : {}),
    });
  }

  changeExpiry(id: string, expiresAt: string): Promise<unknown> {
    return this.json('PUT', `/v1/sender/sealed/${encodeURIComponent(id)}/expiry`, { expiresAt });
  }

  /** The trail as a file: links, so that the browser downloads it with the session cookie. */
  trailUrl(id: string, format: 'csv' | 'json'): string {
    const path = `${this.base}/v1/sender/sealed/${encodeURIComponent(id)}/trail`;
    return format === 'csv' ? `${path}?format=csv` : path;
  }

  /** The reader's sign-out: it ends the session, whoever holds it. */
  logout(): Promise<unknown> {
    return this.json('GET', '/logout');
  }
}

/**
 * The list: the spec names it "B's list" without the name of its field, so the page takes the array where B
 * keeps a list of sealed messages (`sealed`, as its recipient's list), or under `messages`, or bare.
 */
function listOf(body: unknown): SentMessage[] {
  if (Array.isArray(body)) return body as SentMessage[];
  if (!isObject(body)) return [];
  for (const key of ['sealed', 'messages']) if (Array.isArray(body[key])) return body[key] as SentMessage[];
  return [];
}
