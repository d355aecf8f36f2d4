/**
 * A failed call to the auth service, as the page's screens and sentences see it. Apart from the transport
 * (api.ts, fetch and XMLHttpRequest) so that the texts' tests, run in Node, can make one.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: string | undefined,
    /** The error object's id, for a support request. */
    readonly errorId: string | undefined,
    /** From Retry-After, in seconds. */
    readonly retryAfter: number | undefined,
    message: string,
    /**
     * The error object's extra fields: wrong tries left (incorrect_code), the broken seal's CID (seal_broken), when
     * the message ended and whom to ask (message_expired, message_withdrawn).
     */
    readonly details: {
      attemptsLeft?: number;
      /** sms_rate_limit: a code went a moment ago (`interval`), or the count per hour was reached (`hourly`). */
      limit?: 'interval' | 'hourly';
      cid?: string;
      endedAt?: string;
      contact?: string;
      /** reply_already_sent: when the reply went, from another window or device. */
      sentAt?: string;
      /** seal_broken: each cluster's copy and why it did not serve. */
      copies?: Array<{ cluster: string; state: 'damaged' | 'missing' | 'unreachable' }>;
    } = {},
    /** The draft's version after a refused change that still changed it (ETag); see Draft.version. */
    readonly version?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** No answer at all (offline, server down). */
  get network(): boolean {
    return this.status === 0;
  }
}
