/**
 * Every SMS provider Sealpost ships, and the only list of them: SmsProviderName and SMS_PROVIDER's allowed
 * values come from it, and the registry (./index.ts) maps each name to its provider.
 */
export const SMS_PROVIDERS = ['http', 'twilio', 'log'] as const;
export type SmsProviderName = (typeof SMS_PROVIDERS)[number];

/** What every SMS provider does (one file per provider, like the exchange's outbound strategies). */
export interface SmsProvider {
  readonly kind: SmsProviderName;
  /** Sends `text` to an E.164 number; throws SmsProviderError when the provider did not take it. */
  send(message: { to: string; text: string }): Promise<void>;
}

/**
 * The provider refused, failed or did not answer in time. Its message is safe to log: it never holds
 * the text (which holds the code) nor the provider's response body (which may echo the text).
 */
export class SmsProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SmsProviderError';
  }
}

/** A fetch to the provider with a time limit; network errors and timeouts become SmsProviderErrors. */
export async function postToProvider(url: string, init: RequestInit, timeoutMs: number, what: string): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    const reason = timedOut ? `no answer within ${timeoutMs} ms` : describe(error);
    throw new SmsProviderError(`${what}: ${reason}`, { cause: timedOut ? undefined : error });
  }
  // The body is read only to free the connection; it is not logged (it may echo the text).
  await response.arrayBuffer().catch(() => undefined);
  if (!response.ok) throw new SmsProviderError(`${what} answered HTTP ${response.status}`);
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}

export function basicAuth(user: string | undefined, password: string | undefined): Record<string, string> {
  if (user === undefined && password === undefined) return {};
  return { authorization: `Basic ${Buffer.from(`${user ?? ''}:${password ?? ''}`, 'utf8').toString('base64')}` };
}
