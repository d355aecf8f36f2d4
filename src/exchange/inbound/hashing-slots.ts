import { availableParallelism } from 'node:os';

/**
 * At most a few password checks at once. @node-rs/bcrypt runs each check on libuv's thread pool (4 threads
 * by default), which the file system, DNS lookups and zlib share: ten guessers would otherwise fill the
 * pool and queue every other call behind ~100 ms checks, and take every core from the intake. One check
 * at a time on two cores, two from three up: honest AUTH needs a few per second, a check takes ~50-100 ms.
 *
 * Written here rather than taken from a library: a counter and a queue, with nothing to configure.
 */
export class HashingSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly slots = Math.max(1, Math.min(2, availableParallelism() - 1))) {}

  async run<T>(check: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await check();
    } finally {
      // The slot passes straight to the next in line, so `running` never drops and climbs in between.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
