/**
 * A background pass run by one timer: at start, then again a delay after each pass ends, never two at once;
 * `wake` runs one soon (now when idle, right after the current one otherwise); `stop` waits for the pass in
 * flight. The seal service's end, scrub, re-wrap and trail retention each run one; their work itself says in
 * `stopped` when to leave a long pass early.
 */
export class PeriodicPass {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private again = false;
  private halted = false;

  constructor(
    private readonly options: {
      run: () => Promise<unknown>;
      /** The delay before the next pass, asked when one ends. */
      nextDelayMs: () => number;
      /** A pass that threw: logged by the owner, the next pass runs as planned. */
      onError: (error: unknown) => void;
    },
  ) {}

  get stopped(): boolean {
    return this.halted;
  }

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.halted = true;
    clearTimeout(this.timer);
    await this.running;
  }

  wake(): void {
    if (this.halted) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  private schedule(delay: number) {
    if (this.halted) return;
    this.timer = setTimeout(() => {
      this.running = this.options
        .run()
        .catch(this.options.onError)
        .finally(() => {
          this.running = undefined;
          const again = this.again;
          this.again = false;
          this.schedule(again ? 0 : this.options.nextDelayMs());
        });
    }, delay);
    this.timer.unref();
  }
}
