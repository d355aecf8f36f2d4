import { connect, type Socket } from 'node:net';

/**
 * What clamd said about a stream. `too_large`: clamd stopped reading at its StreamMaxLength, so the
 * file was not (fully) scanned. `failed`: no verdict (connection lost, timeout, an ERROR reply).
 */
export type ScanVerdict =
  | { outcome: 'clean' }
  | { outcome: 'infected'; signature: string }
  | { outcome: 'too_large' }
  | { outcome: 'failed'; reason: string };

export interface ClamdOptions {
  host: string;
  port: number;
  /** Connecting, and waiting for the verdict once the whole stream is sent (CLAMD_TIMEOUT). */
  timeoutMs: number;
}

/** clamd reads INSTREAM chunks of any size up to StreamMaxLength; smaller frames keep our buffers small. */
const MAX_FRAME = 256 * 1024;

/**
 * A client for clamd's INSTREAM command over TCP (clamd(8): `zINSTREAM\0`, then chunks each prefixed
 * with its length as 4 bytes big-endian, then a zero length; the answer is one NUL-terminated line).
 *
 * Written by hand rather than with the npm `clamscan` package: when a stream passes clamd's
 * StreamMaxLength, clamd answers "INSTREAM size limit exceeded. ERROR" and closes the socket, and
 * clamscan then reports the EPIPE of its next write instead of that answer — so an oversize file looks
 * like a scanner outage (and with ATTACHMENTS_REQUIRE_SCAN=false, an oversize file would pass unscanned).
 * Here an early reply is read and wins over the write errors that follow it; when the reset lost it, a
 * PING tells a deliberate drop from a dead clamd (see ClamdScan).
 */
export class ClamdClient {
  constructor(readonly options: ClamdOptions) {}

  /** Opens one INSTREAM scan; rejects when clamd cannot be reached within the timeout. */
  async open(): Promise<ClamdScan> {
    const socket = await connectWithin(this.options);
    return new ClamdScan(socket, this.options.timeoutMs, () =>
      this.ping().then(
        () => true,
        () => false,
      ),
    );
  }

  /** `zPING` → `PONG` (readiness). */
  async ping(): Promise<void> {
    const socket = await connectWithin(this.options);
    try {
      const reply = await readReply(socket, this.options.timeoutMs, () => socket.write('zPING\0'));
      if (reply !== 'PONG') throw new Error(`clamd answered ${JSON.stringify(reply)} to PING`);
    } finally {
      socket.destroy();
    }
  }
}

/** One INSTREAM scan: feed it the file's chunks in order, then finish() for the verdict. */
export class ClamdScan {
  private reply = '';
  private settled: ScanVerdict | undefined;
  private readonly done: Promise<ScanVerdict>;

  constructor(
    private readonly socket: Socket,
    private readonly timeoutMs: number,
    /** PINGs clamd on a new connection. */
    private readonly alive: () => Promise<boolean>,
  ) {
    socket.setNoDelay(true);
    this.done = new Promise<ScanVerdict>((resolve) => {
      const settle = (verdict: ScanVerdict) => {
        if (this.settled) return;
        this.settled = verdict;
        resolve(verdict);
        socket.destroy();
      };
      // clamd closes the connection right after its size-limit answer, with our next chunks unread, so
      // the close can be a reset — and a reset (or the EPIPE of our next write, which Node reports before
      // reading what arrived) can lose the answer. A clamd that still answers PING then dropped this
      // stream on purpose, and the size limit is what it does that for; a clamd that does not, failed.
      let lost = false;
      const lose = (reason: string) => {
        if (this.settled || lost) return;
        lost = true;
        void this.alive().then((alive) => settle(alive ? { outcome: 'too_large' } : { outcome: 'failed', reason }));
      };
      socket.on('data', (chunk: Buffer) => {
        this.reply += chunk.toString('latin1');
        if (this.reply.includes('\0')) settle(parseVerdict(this.reply.slice(0, this.reply.indexOf('\0'))));
      });
      // A reply without its NUL (older clamd) still counts once the socket closes.
      socket.on('close', () =>
        this.reply ? settle(parseVerdict(this.reply)) : lose('clamd closed the connection without a verdict'),
      );
      socket.on('error', (error) => {
        if (!this.reply) lose(error.message);
      });
    });
    socket.write('zINSTREAM\0');
  }

  /** A verdict that came before the end of the stream (clamd's size limit, or a dropped connection). */
  get early(): ScanVerdict | undefined {
    return this.settled;
  }

  /** Sends one chunk; resolves once it is handed to the kernel, so a slow clamd slows the upload down. */
  async send(chunk: Buffer): Promise<void> {
    for (let offset = 0; offset < chunk.length && !this.settled; offset += MAX_FRAME) {
      // One turn of the event loop first, so an answer clamd already sent is read before we write on.
      await new Promise((resolve) => setImmediate(resolve));
      const part = chunk.subarray(offset, offset + MAX_FRAME);
      const length = Buffer.alloc(4);
      length.writeUInt32BE(part.length);
      await this.write(length, part);
    }
  }

  /** Sends the zero-length terminator and waits for the verdict (at most the timeout). */
  async finish(): Promise<ScanVerdict> {
    if (!this.settled) await this.write(Buffer.alloc(4));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<ScanVerdict>((resolve) => {
      timer = setTimeout(
        () => resolve({ outcome: 'failed', reason: `no verdict from clamd within ${this.timeoutMs} ms` }),
        this.timeoutMs,
      );
    });
    try {
      return await Promise.race([this.done, timeout]);
    } finally {
      clearTimeout(timer);
      this.socket.destroy();
    }
  }

  abort(): void {
    this.socket.destroy();
  }

  /** Writes the pieces as one frame without copying them together (an upload would churn its size in garbage). */
  private write(...pieces: Buffer[]): Promise<void> {
    // Write errors are not ours to throw: the socket's own handlers turn them into the verdict.
    return new Promise((resolve) => {
      if (this.settled || this.socket.destroyed) return resolve();
      this.socket.cork();
      pieces.forEach((piece, i) => {
        this.socket.write(piece, i === pieces.length - 1 ? () => resolve() : undefined);
      });
      this.socket.uncork();
    });
  }
}

function parseVerdict(line: string): ScanVerdict {
  const text = line.trim();
  if (/^stream: OK$/.test(text)) return { outcome: 'clean' };
  const found = /^stream: (.+) FOUND$/.exec(text);
  if (found) return { outcome: 'infected', signature: found[1]! };
  if (/size limit exceeded/i.test(text)) return { outcome: 'too_large' };
  return { outcome: 'failed', reason: `clamd answered ${JSON.stringify(text.slice(0, 200))}` };
}

function connectWithin(options: ClamdOptions): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: options.host, port: options.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `clamd at ${options.host}:${options.port} did not accept a connection within ${options.timeoutMs} ms`,
        ),
      );
    }, options.timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(
        new Error(`clamd at ${options.host}:${options.port} is not reachable: ${error.message}`, { cause: error }),
      );
    });
  });
}

function readReply(socket: Socket, timeoutMs: number, send: () => void): Promise<string> {
  return new Promise((resolve, reject) => {
    let reply = '';
    const timer = setTimeout(() => reject(new Error(`no answer from clamd within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\0')) {
        clearTimeout(timer);
        resolve(reply.slice(0, reply.indexOf('\0')));
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(reply);
    });
    send();
  });
}
