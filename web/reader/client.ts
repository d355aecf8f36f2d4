import { ApiError } from './api-error.ts';

/**
 * The auth service's JSON API as the browser pages call it (same origin, the session cookie rides along):
 * the transport the reader's Api and the sender's SenderApi share. It keeps the CSRF token from the latest
 * X-CSRF-Token response header and sends it on every POST, PUT and DELETE (docs/specification.md#csrf).
 * Failures become ApiError values, never raw bodies.
 */
export class JsonClient {
  protected csrf: string | undefined;

  constructor(protected readonly base = '') {}

  protected async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await this.request<T>(method, path, body)).body;
  }

  /** A JSON request; `version` goes as If-Match, the answer's ETag comes back as `version`. */
  protected async request<T>(
    method: string,
    path: string,
    body?: unknown,
    ifMatch?: number,
  ): Promise<{ body: T; version: number | undefined }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (ifMatch !== undefined) headers['if-match'] = `"${ifMatch}"`;
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
    const version = versionOf(response.headers.get('etag'));
    if (!response.ok)
      throw apiError(response.status, parsed, response.headers.get('retry-after'), response.headers.get('etag'));
    return { body: parsed as T, version };
  }
}

/** The draft version in an ETag (`"7"`). */
export function versionOf(etag: string | null): number | undefined {
  const match = etag ? /^(?:W\/)?"(\d+)"$/.exec(etag.trim()) : null;
  return match ? Number(match[1]) : undefined;
}

export function apiError(
  status: number,
  body: unknown,
  retryAfter: string | null,
  etag: string | null = null,
): ApiError {
  const object = isObject(body) ? body : {};
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined;
  return new ApiError(
    status,
    typeof object.errorCode === 'string' ? object.errorCode : undefined,
    typeof object.id === 'string' ? object.id : undefined,
    seconds,
    typeof object.message === 'string' ? object.message : `HTTP ${status}`,
    {
      ...(typeof object.attemptsLeft === 'number' ? { attemptsLeft: object.attemptsLeft } : {}),
      ...(object.limit === 'interval' || object.limit === 'hourly' ? { limit: object.limit } : {}),
      ...(typeof object.cid === 'string' ? { cid: object.cid } : {}),
      ...(typeof object.endedAt === 'string' ? { endedAt: object.endedAt } : {}),
      ...(typeof object.contact === 'string' ? { contact: object.contact } : {}),
      ...(typeof object.sentAt === 'string' ? { sentAt: object.sentAt } : {}),
      ...(Array.isArray(object.copies) ? { copies: copiesOf(object.copies) } : {}),
    },
    versionOf(etag),
  );
}

/** seal_broken's copies, those of a known state only. */
function copiesOf(list: unknown[]): NonNullable<ApiError['details']['copies']> {
  return list.filter(
    (copy): copy is NonNullable<ApiError['details']['copies']>[number] =>
      isObject(copy) &&
      typeof copy.cluster === 'string' &&
      (copy.state === 'damaged' || copy.state === 'missing' || copy.state === 'unreachable'),
  );
}

export function parseJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
