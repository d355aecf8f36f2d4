/**
 * Coalesces concurrent calls into batches: items submitted while earlier batches are being written
 * wait and go together in the next one — one statement, one round trip and one commit for many
 * callers (a group commit, as PostgreSQL does for its own log). With nothing in flight an item goes
 * out at once (after the current turn of the event loop), so a lone caller waits no longer than before,
 * unless the `hold` option says the work can wait.
 *
 * `run` answers one result per item, in order. When a batch of several fails with an error that
 * `retryAlone` says is about the data (a value the database refuses), each item is tried again on its
 * own, so that one bad item cannot fail the others; any other error (the database unreachable) fails
 * the whole batch at once rather than multiplying the calls to a struggling server.
 */
/** While items are held, how often the hold's condition is asked again. */
const HOLD_LOOK_MS = 50;

export class Batcher<I, O> {
  private pending: Array<{ item: I; at: number; resolve: (result: O) => void; reject: (error: unknown) => void }> = [];
  private running = 0;
  private scheduled = false;
  /** The timer of a hold (see the `hold` option), while one is waiting. */
  private holdTimer: NodeJS.Timeout | undefined;
  /** flush() was called: what is pending goes without waiting for the hold. */
  private flushing = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: {
      maxBatch: number;
      maxConcurrent: number;
      retryAlone?: (error: unknown) => boolean;
      /**
       * Work that can wait: while this answers true, items are held (and gather into larger batches) until
       * maxBatch of them are waiting or the oldest has waited `hold.maxMs`.
       */
      hold?: { while: () => boolean; maxMs: number };
    },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, at: performance.now(), resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.options.maxConcurrent || this.pending.length === 0) return;
    this.scheduled = true;
    const held = this.heldFor();
    if (held > 0) {
      this.holdTimer = setTimeout(() => {
        this.holdTimer = undefined;
        this.scheduled = false;
        this.schedule();
      }, held);
      return;
    }
    // setImmediate rather than a microtask: calls made by every I/O callback of this loop turn join.
    setImmediate(() => {
      this.scheduled = false;
      while (this.running < this.options.maxConcurrent && this.pending.length > 0) {
        const batch = this.pending.splice(0, this.options.maxBatch);
        if (this.pending.length === 0) this.flushing = false;
        this.running++;
        void this.execute(batch).finally(() => {
          this.running--;
          this.schedule();
        });
      }
    });
  }

  /** Ends the hold for the items pending now: someone is waiting for one of them. */
  flush(): void {
    if (this.pending.length === 0) return;
    this.flushing = true;
    if (this.holdTimer) {
      clearTimeout(this.holdTimer);
      this.holdTimer = undefined;
      this.scheduled = false;
    }
    this.schedule();
  }

  /** How long to wait before looking again, when `hold` keeps the pending items back; 0 to go now. */
  private heldFor(): number {
    const { hold, maxBatch } = this.options;
    if (!hold || this.flushing || this.pending.length >= maxBatch || !hold.while()) return 0;
    const left = hold.maxMs - (performance.now() - this.pending[0]!.at);
    return left <= 0 ? 0 : Math.min(left, HOLD_LOOK_MS);
  }

  private async execute(batch: Batcher<I, O>['pending']): Promise<void> {
    try {
      const results = await this.run(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => {
        entry.resolve(results[i]!);
      });
    } catch (error) {
      if (batch.length === 1 || !this.options.retryAlone?.(error)) {
        for (const entry of batch) entry.reject(error);
        return;
      }
      await Promise.all(
        batch.map(async (entry) => {
          try {
            entry.resolve((await this.run([entry.item]))[0]!);
          } catch (alone) {
            entry.reject(alone);
          }
        }),
      );
    }
  }
}

/**
 * PostgreSQL refused a value rather than the statement's circumstances: SQLSTATE class 22 (data
 * exception, e.g. a NUL byte in text) or 23 (integrity constraint violation).
 */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}
