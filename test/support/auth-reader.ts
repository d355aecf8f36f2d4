/**
 * A reader's browser as the auth tests need it: one cookie jar (the session cookie), the latest CSRF
 * token from an X-CSRF-Token response header, and every answer with its raw Set-Cookie line.
 */
export interface ReaderResponse {
  status: number;
  headers: Headers;
  body: any;
  /** The raw Set-Cookie line of this answer, if any. */
  setCookie: string | undefined;
}

export class Reader {
  /** `name=value` as the browser would send it back. */
  cookie: string | undefined;
  csrf: string | undefined;

  constructor(
    readonly baseUrl: string,
    /** Sent as X-Forwarded-For (with AUTH_TRUST_PROXY), so one test can play several clients. */
    readonly forwardedFor?: string,
  ) {}

  async request(
    method: string,
    path: string,
    options: { body?: unknown; raw?: string; csrf?: string | null; headers?: Record<string, string> } = {},
  ): Promise<ReaderResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookie) headers.cookie = this.cookie;
    if (this.forwardedFor) headers['x-forwarded-for'] = this.forwardedFor;
    const csrf = options.csrf === undefined ? this.csrf : options.csrf;
    if (csrf !== null && csrf !== undefined && method !== 'GET') headers['x-csrf-token'] = csrf;
    if (options.body !== undefined || options.raw !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      redirect: 'manual',
    });
    const setCookie = response.headers.get('set-cookie') ?? undefined;
    if (setCookie) {
      const [pair] = setCookie.split(';');
      this.cookie = /Max-Age=-/.test(setCookie) ? undefined : pair;
    }
    const token = response.headers.get('x-csrf-token');
    if (token) this.csrf = token;
    const type = response.headers.get('content-type') ?? '';
    const body = type.includes('json') ? await response.json() : Buffer.from(await response.arrayBuffer());
    return { status: response.status, headers: response.headers, body, setCookie };
  }

  get(path: string) {
    return this.request('GET', path);
  }

  /** The session token in the cookie jar. */
  get token(): string | undefined {
    return this.cookie?.split('=')[1];
  }
}
