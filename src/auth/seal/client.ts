import { AppError } from '../../kernel/errors.ts';

/** GET {SEAL_URL}/v1/sealed/{id}: the sealed-message record as the seal service (B) keeps it. */
export interface SealedRecord {
  id: string;
  cid: string;
  sha256: string;
  sender: string;
  subject: string;
  sealedAt: string;
  recipients: Array<{ email: string; method: 'sms' | 'email'; mobile?: string }>;
  pins: Array<{ cluster: string; status: string; error?: string }>;
}

/** Sealed-message ids as they may appear in our URLs; anything else is never sent on to B. */
export const MESSAGE_ID_PATTERN = '^[A-Za-z0-9_-]{1,128}$';
const MESSAGE_ID = new RegExp(MESSAGE_ID_PATTERN);

const TIMEOUT_MS = 30_000;

/**
 * The seal service's API as the auth service uses it (services talk over HTTP only), with the service
 * token. Any failure is a 502 error object for our client; B's own message is logged, not passed on.
 */
export class SealClient {
  constructor(private readonly options: { baseUrl: string; serviceToken: string; timeoutMs?: number }) {}

  /** The record, or undefined when B does not know the id. */
  async sealed(id: string): Promise<SealedRecord | undefined> {
    if (!MESSAGE_ID.test(id)) return undefined;
    const response = await this.get(`/v1/sealed/${encodeURIComponent(id)}`);
    // B answers 400 for an id that is not of its shape (a truncated link): for us that message does not exist.
    if (response.status === 404 || response.status === 400) {
      await response.arrayBuffer().catch(() => undefined);
      return undefined;
    }
    if (response.status !== 200) throw await upstreamError(response, 'read the sealed message record');
    const record = (await response.json().catch(() => undefined)) as SealedRecord | undefined;
    if (!isRecord(record) || record.id !== id) {
      throw new AppError('upstream_failed', 502, 'The seal service answered with an unexpected record');
    }
    return record;
  }

  /**
   * The plaintext raw message, which B hands out only after its SHA-256 matched the seal. Anything but
   * a 200 means there is nothing we may show (DESIGN.md: the reader shows that the seal holds).
   */
  async content(id: string): Promise<Buffer> {
    if (!MESSAGE_ID.test(id)) throw new AppError('not_found', 404, 'No such sealed message');
    const response = await this.get(`/v1/sealed/${encodeURIComponent(id)}/content`);
    if (response.status !== 200) throw await upstreamError(response, 'read and verify the sealed message');
    return Buffer.from(await response.arrayBuffer());
  }

  private async get(path: string): Promise<Response> {
    try {
      return await fetch(`${this.options.baseUrl}${path}`, {
        headers: { authorization: `Bearer ${this.options.serviceToken}` },
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? TIMEOUT_MS),
      });
    } catch (error) {
      throw new AppError('upstream_failed', 502, 'The seal service is not reachable; try again later', { cause: error });
    }
  }
}

async function upstreamError(response: Response, what: string): Promise<AppError> {
  const body = await response.text().catch(() => '');
  let reason = body.slice(0, 300);
  try {
    const parsed = JSON.parse(body) as { message?: unknown; errorCode?: unknown };
    if (typeof parsed.message === 'string') reason = `${parsed.errorCode ?? ''} ${parsed.message}`.trim();
  } catch {
    // not an error object: keep the start of the body for the log
  }
  return new AppError('upstream_failed', 502, `The seal service could not ${what}; nothing is shown`, {
    cause: new Error(`seal service answered HTTP ${response.status}: ${reason}`),
  });
}

function isRecord(value: unknown): value is SealedRecord {
  const record = value as SealedRecord;
  return (
    typeof record?.id === 'string' &&
    Array.isArray(record.recipients) &&
    record.recipients.every((r) => typeof r?.email === 'string' && (r.method === 'sms' || r.method === 'email')) &&
    Array.isArray(record.pins)
  );
}
